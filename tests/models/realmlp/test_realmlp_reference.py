"""Cross-checks against pytabkit's own functions (optional reference package)."""

import numpy as np
import pytest
import torch
from fixtures.optional import import_reference

from tabbench.models.realmlp.preprocessing import RobustScaler, smooth_clip
from tabbench.models.realmlp.schedules import get_schedule

pytestmark = pytest.mark.reference


@pytest.mark.parametrize("name", ["coslog4", "flat_cos"])
def test_schedules_match_pytabkit(name):
    scheduling = import_reference("pytabkit.models.training.scheduling")
    ref = scheduling.get_schedule(name)
    ours = get_schedule(name)
    for t in np.linspace(0, 1, 41):
        assert ours(float(t)) == pytest.approx(ref.call_time_(float(t)), abs=1e-12)


def test_smooth_clip_matches_pytabkit():
    models = import_reference("pytabkit.models.nn_models.models")
    x = np.linspace(-50, 50, 201)
    ref = models.smooth_clip_func(torch.as_tensor(x), 3.0).numpy()
    np.testing.assert_allclose(smooth_clip(x, 3.0), ref, rtol=1e-12)


def test_robust_scale_matches_pytabkit():
    pipeline = import_reference("pytabkit.models.nn_models.pipeline")
    data = import_reference("pytabkit.models.data.data")
    rng = np.random.default_rng(0)
    x = np.column_stack(
        [rng.normal(size=200), np.r_[np.zeros(190), rng.normal(size=10)], np.full(200, 2.0)]
    )
    x_t = torch.as_tensor(x, dtype=torch.float64)
    ds = data.DictDataset({"x_cont": x_t}, {"x_cont": data.TensorInfo(feat_shape=[3])})
    centred = pipeline.MedianCenterFactory().fit_transform(ds)[1]
    _, scaled = pipeline.RobustScaleFactory().fit_transform(centred)
    ours = RobustScaler.fit(x).transform(x)
    np.testing.assert_allclose(ours, scaled.tensors["x_cont"].numpy(), rtol=1e-10, atol=1e-12)
