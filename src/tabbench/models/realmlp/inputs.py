"""What RealMLP's networks take: the preprocessed splits as tensors on the device, validation
and test joined for one evaluation pass, and the checks of a split before any work. Shared by
the single-config trainer (:mod:`tabbench.models.realmlp.trainer`) and the stacked one
(:mod:`tabbench.models.realmlp.stacked`)."""

from __future__ import annotations

import numpy as np
import torch

from tabbench.models.base import SplitData
from tabbench.models.realmlp.preprocessing import EncodedSplit


def encoded_tensors(split: EncodedSplit, device: torch.device) -> tuple[torch.Tensor, ...]:
    """The (numerical, one-hot, categorical-index) arrays of ``split`` as tensors on ``device``
    (what the network takes; shared with the stacked trainer)."""
    return tuple(torch.as_tensor(a).to(device) for a in (split.x_num, split.x_onehot, split.x_cat))


def concat_encoded(a: EncodedSplit, b: EncodedSplit) -> EncodedSplit:
    """``a`` then ``b`` (validation and test: one evaluation pass per epoch)."""
    return EncodedSplit(
        x_num=np.concatenate([a.x_num, b.x_num]),
        x_onehot=np.concatenate([a.x_onehot, b.x_onehot]),
        x_cat=np.concatenate([a.x_cat, b.x_cat]),
    )


def check_data(data: SplitData) -> None:
    """A clear error for data RealMLP cannot train on (fewer than 2 classes, no training rows,
    labels outside 0..K-1), before any work."""
    if data.n_classes < 2:
        raise ValueError(f"classification needs n_classes >= 2, got {data.n_classes}")
    if len(data.X_train) == 0:
        raise ValueError("empty training set")
    for part, X, y in (
        ("train", data.X_train, data.y_train),
        ("val", data.X_val, data.y_val),
        ("test", data.X_test, data.y_test),
    ):
        y = np.asarray(y)
        if len(y) != len(X):
            raise ValueError(f"{part}: {len(X)} rows but {len(y)} labels")
        if len(y) and (y.min() < 0 or y.max() >= data.n_classes):
            raise ValueError(f"{part} labels must be codes in 0..{data.n_classes - 1}")
