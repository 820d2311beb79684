"""RealMLP preprocessing: smooth clipping, robust scaling fallbacks, categorical encodings."""

import numpy as np
import pandas as pd
import pytest

from tabbench.models.realmlp.preprocessing import RealMLPPreprocessor, RobustScaler, smooth_clip


def test_smooth_clip_known_values():
    x = np.array([0.0, 3.0, -4.0, 1e9])
    out = smooth_clip(x, 3.0)
    # 3/sqrt(2); -4/sqrt(1 + 16/9) = -4/(5/3) = -2.4; huge values approach the bound 3.
    np.testing.assert_allclose(out[:3], [0.0, 3 / np.sqrt(2), -2.4])
    assert out[3] == pytest.approx(3.0)
    assert np.all(np.abs(smooth_clip(np.linspace(-1e3, 1e3, 101))) < 3.0)


def test_robust_scale_interquartile_range():
    x = np.array([[0.0], [1.0], [2.0], [3.0], [4.0]])
    sc = RobustScaler.fit(x)
    # median 2, q25 1, q75 3 -> factor 1/2
    assert sc.median[0] == 2.0 and sc.factor[0] == pytest.approx(0.5)
    np.testing.assert_allclose(sc.transform(x)[:, 0], [-1, -0.5, 0, 0.5, 1])


def test_robust_scale_falls_back_to_half_range():
    # 7 zeros and one 10: q25 = q75 = 0, so the scale is 1/(0.5 * (10 - 0)) = 0.2.
    x = np.array([[0.0]] * 7 + [[10.0]])
    sc = RobustScaler.fit(x)
    assert sc.median[0] == 0.0 and sc.factor[0] == pytest.approx(0.2)
    np.testing.assert_allclose(sc.transform(x)[-1], [2.0])


def test_robust_scale_constant_column_is_switched_off():
    x = np.full((6, 1), 7.5)
    sc = RobustScaler.fit(x)
    assert sc.factor[0] == 0.0
    np.testing.assert_array_equal(sc.transform(np.array([[7.5], [100.0]])), [[0.0], [0.0]])


def _cat(values, categories):
    return pd.Series(pd.Categorical(values, categories=categories))


def _frame():
    n = 40
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "num": rng.normal(10, 5, n),
            "bin": _cat(["a", "b"] * 15 + ["a"] * 8 + [None, None], ["a", "b"]),
            "single": _cat(["x"] * 35 + [None] * 5, ["x", "y"]),
            "tri": _cat(["p", "q", "r", "q"] * 10, ["p", "q", "r", "s"]),
            "many": _cat([f"c{i % 12}" for i in range(n)], [f"c{i}" for i in range(12)]),
            "allmissing": _cat([None] * n, ["u"]),
        }
    )


def test_binary_categorical_is_one_pm1_column_with_missing_zero():
    X = _frame()
    pre = RealMLPPreprocessor().fit(X)
    kinds = {p.column: p.kind for p in pre.cat_plans}
    assert kinds == {
        "bin": "binary",
        "single": "single",
        "tri": "onehot",
        "many": "embed",
        "allmissing": "drop",
    }
    raw = pre._raw_onehot(X)
    assert raw.shape[1] == 1 + 1 + 3  # bin, single, tri (3 seen categories; unseen 's' has none)
    np.testing.assert_array_equal(raw[:4, 0], [1, -1, 1, -1])  # a -> +1, b -> -1
    np.testing.assert_array_equal(raw[-2:, 0], [0, 0])  # missing -> 0
    # single category: present +1, missing -1 (the reference's two-slot coding)
    np.testing.assert_array_equal(raw[[0, 39], 1], [1, -1])
    np.testing.assert_array_equal(raw[:4, 2:], [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 0]])


def test_onehot_block_is_scaled_and_clipped_like_numericals():
    X = _frame()
    pre = RealMLPPreprocessor().fit(X)
    enc = pre.transform(X)
    raw = pre._raw_onehot(X)
    sc = RobustScaler.fit(raw)
    np.testing.assert_allclose(enc.x_onehot, smooth_clip(sc.transform(raw)), rtol=1e-6)
    # bin column: 23 a (+1), 15 b (-1), 2 missing (0) -> median 1, IQR 2 -> b maps to -1 -> clip
    np.testing.assert_allclose(enc.x_onehot[1, 0], smooth_clip(np.array(-1.0)), rtol=1e-6)


def test_embedding_indices_and_unseen_categories():
    X = _frame()
    pre = RealMLPPreprocessor().fit(X)
    assert pre.cat_sizes == [13]  # 12 categories + missing slot
    enc = pre.transform(X)
    np.testing.assert_array_equal(enc.x_cat[:13, 0], [*range(1, 13), 1])
    test = X.iloc[:3].copy()
    test["many"] = _cat([None, "c3", "c0"], [f"c{i}" for i in range(12)])
    test["tri"] = _cat(["s", "p", None], ["p", "q", "r", "s"])  # 's' never seen in training
    enc_t = pre.transform(test)
    np.testing.assert_array_equal(enc_t.x_cat[:, 0], [0, 4, 1])
    raw_t = pre._raw_onehot(test)
    np.testing.assert_array_equal(raw_t[:, 2:], [[0, 0, 0], [1, 0, 0], [0, 0, 0]])


def test_fit_uses_train_rows_only():
    X = _frame()
    pre = RealMLPPreprocessor().fit(X.iloc[:20])
    median = pre.num_scaler.median.copy()
    shifted = X.copy()
    shifted["num"] += 1000.0
    pre.transform(shifted)  # transforming never refits
    np.testing.assert_array_equal(pre.num_scaler.median, median)
    np.testing.assert_allclose(median, np.median(X["num"].iloc[:20]))


def test_numerical_pipeline_is_centre_scale_clip():
    X = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0, 4.0, 100.0]})
    enc = RealMLPPreprocessor().fit(X).transform(X)
    # median 2.5, q25 1.25, q75 3.75 -> factor 0.4
    expected = smooth_clip((X["a"].to_numpy() - 2.5) * 0.4)
    np.testing.assert_allclose(enc.x_num[:, 0], expected, rtol=1e-6)
    assert enc.x_num.dtype == np.float32 and enc.x_onehot.shape == (6, 0)


def test_missing_numericals_raise():
    X = pd.DataFrame({"a": [0.0, np.nan, 1.0]})
    with pytest.raises(ValueError, match="non-finite"):
        RealMLPPreprocessor().fit(X)


def test_object_columns_raise():
    X = pd.DataFrame({"a": ["x", "y", "z"]}, dtype=object)
    with pytest.raises(ValueError, match="category"):
        RealMLPPreprocessor().fit(X)
