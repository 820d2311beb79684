"""The stopping metric ``plugin_gap``: 1 − the mean top-class probability of the validation set.

Any function of the logits will do; this one is cheap, finite and differs from every built-in,
so a test can tell its column, its selections and its method apart. Registered by the entry
point ``plugin_gap = "tabbench_example_plugin.metric:METRIC"`` (group
``tabbench.stopping_metrics``): every runs file then has ``val_plugin_gap``, selection selects
on it, and the summary shows the method ``Plugin-Gap+TS``.
"""

from __future__ import annotations

import numpy as np

from tabbench.metrics import StoppingMetric


def batched(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    """E values, lower is better, from float32 logits (E, N, K) and int64 labels (N,).

    Why batched: the recorder scores a whole chunk of epochs at once, so one vectorised pass
    over (E, N, K) costs far less than E calls."""
    assert logits.dtype == np.float32 and logits.ndim == 3, (logits.dtype, logits.shape)
    assert y.dtype == np.int64 and y.shape == (logits.shape[1],), (y.dtype, y.shape)
    z = logits - logits.max(axis=2, keepdims=True)
    p_max = 1.0 / np.exp(z).sum(axis=2)
    return 1.0 - p_max.mean(axis=1, dtype=np.float64)


def reference(logits: np.ndarray, y: np.ndarray) -> float:
    """The same metric of one epoch (N, K): tabbench's tests compare ``batched`` against it."""
    return float(batched(logits[None].astype(np.float32), y)[0])


METRIC = StoppingMetric("plugin_gap", "Plugin-Gap", batched, reference,
                        description="one minus the mean top-class probability")
