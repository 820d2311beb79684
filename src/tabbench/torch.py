"""Refinement losses as torchmetrics metrics, for PyTorch Lightning (or any torchmetrics user).

Lightning's early stopping and checkpointing monitor a logged metric. Logging validation
TS-refinement makes them implement the paper's recipe without any loop helper:

```python
class Model(LightningModule):
    def __init__(self):
        ...
        self.val_ts_ref = TSRefinement()

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.val_ts_ref.update(self(x), y)
        self.log("val_ts_ref", self.val_ts_ref)       # computed once per epoch

Trainer(callbacks=[EarlyStopping(monitor="val_ts_ref", mode="min", patience=16),
                   ModelCheckpoint(monitor="val_ts_ref", mode="min")])
```

then restore the best checkpoint and fit the temperature on the same validation logits
(:class:`tabbench.calibration.TemperatureScaling`): refine, then calibrate.

Why the states are the logits and labels themselves (concatenated, ``dist_reduce_fx="cat"``):
a refinement loss is not a sum over samples — the temperature is fit on the whole validation
set — so no per-batch statistic can be summed. Batches accumulate on the metric's device; in
distributed runs torchmetrics gathers every process's batches (uneven sizes included) before
``compute``, which moves them to the CPU and evaluates :func:`tabbench.stopping.refinement_loss`
(the fast paths, equal to :mod:`tabbench.metrics`' definitions). Memory: the validation logits
of one epoch, which a validation loop produces anyway.

This module is the only one that imports torchmetrics: it needs the ``torch`` extra
(``pip install 'tabbench[torch]'``).
"""

from __future__ import annotations

import math
from typing import Any

from tabbench._scores import ScoreType, check_score_type
from tabbench.core.extras import require_extra
from tabbench.stopping import check_kind, refinement_loss

require_extra("torch", __name__)

import torch  # noqa: E402  (after the check)
from torchmetrics import Metric  # noqa: E402
from torchmetrics.utilities import dim_zero_cat  # noqa: E402

__all__ = ["RefinementMetric", "TSRefinement", "TSRefinementBrier"]


class RefinementMetric(Metric):
    """A refinement loss (lower is better) of all the logits seen since the last reset.

    ``update(preds, target)``: ``preds`` logits (N, K) or binary margins (N,)
    (``scores="logits"``), or probabilities (``scores="proba"``); ``target`` class codes
    0..K−1 (N,). ``compute()`` returns a float32 scalar on the metric's device (float32:
    every accelerator has it); non-finite logits (a diverged epoch) give NaN, which
    Lightning's ``EarlyStopping`` treats as a stop by default (``check_finite``).

    Parameters
    ----------
    kind : str, default "ts_ref"
        Any of :func:`tabbench.stopping.stopping_kinds` (a refinement kind or any registered
        stopping metric).
    scores : {"logits", "proba"}, default "logits"
        What ``update`` is given.
    **kwargs
        torchmetrics' own (``sync_on_compute``, ``process_group``, ...).

    Examples
    --------
    Batches accumulate; the loss is computed on all of them at once:

    >>> import torch
    >>> from tabbench.metrics.examples import noisy_logits
    >>> from tabbench.torch import RefinementMetric
    >>> logits, y = map(torch.as_tensor, noisy_logits(300, 3, scale=4.0))
    >>> metric = RefinementMetric("logloss")
    >>> for batch in torch.arange(300).split(100):
    ...     metric.update(logits[batch], y[batch])
    >>> round(metric.compute().item(), 3)
    1.681
    """

    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    def __init__(self, kind: str = "ts_ref", scores: ScoreType = "logits", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kind = check_kind(kind)
        check_score_type(scores)
        self.scores = scores
        self.add_state("preds", default=[], dist_reduce_fx="cat")
        self.add_state("target", default=[], dist_reduce_fx="cat")

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:
        """Keep one batch of validation outputs and labels (on the metric's device).

        Parameters
        ----------
        preds : Tensor of shape (n_samples, n_classes) or (n_samples,)
            Logits or binary margins (or probabilities with ``scores="proba"``).
        target : Tensor of shape (n_samples,)
            Class codes 0..K−1.
        """
        preds, target = torch.as_tensor(preds), torch.as_tensor(target)
        if preds.ndim not in (1, 2) or target.ndim != 1 or preds.shape[0] != target.shape[0]:
            raise ValueError(
                f"expected preds (N,) or (N, K) and target (N,), got {tuple(preds.shape)} "
                f"and {tuple(target.shape)}"
            )
        self.preds.append(preds.detach())
        self.target.append(target.detach())

    def compute(self) -> torch.Tensor:
        """The loss of every sample seen (across processes once synced).

        Returns
        -------
        Tensor
            A float32 scalar on the metric's device; NaN if any logit is not finite.
        """
        preds, target = dim_zero_cat(self.preds), dim_zero_cat(self.target)
        if torch.isfinite(preds).all():
            value = refinement_loss(target, preds, self.kind, scores=self.scores)
        else:
            value = math.nan
        return torch.tensor(value, dtype=torch.float32, device=preds.device)


class TSRefinement(RefinementMetric):
    """TS-refinement (the paper's stopping criterion): validation log loss after temperature
    scaling fit on the same outputs, with Laplace smoothing (:class:`RefinementMetric`).

    Parameters
    ----------
    scores : {"logits", "proba"}, default "logits"
        What ``update`` is given.
    **kwargs
        torchmetrics' own (``sync_on_compute``, ``process_group``, ...).

    Examples
    --------
    Over-confident logits: TS-refinement is the log loss they would have after the best
    temperature.

    >>> import torch
    >>> from tabbench.metrics.examples import noisy_logits
    >>> from tabbench.torch import RefinementMetric, TSRefinement
    >>> logits, y = map(torch.as_tensor, noisy_logits(300, 3, scale=4.0))
    >>> ts_ref = TSRefinement()
    >>> ts_ref.update(logits, y)
    >>> round(ts_ref.compute().item(), 3)  # tabbench.metrics.ts_ref on the same logits
    0.877
    >>> logloss = RefinementMetric("logloss")
    >>> logloss.update(logits, y)
    >>> round(logloss.compute().item(), 3)
    1.681
    """

    def __init__(self, scores: ScoreType = "logits", **kwargs: Any) -> None:
        super().__init__("ts_ref", scores, **kwargs)


class TSRefinementBrier(RefinementMetric):
    """Brier-refinement: the Brier score of that same temperature-scaled output
    (:class:`RefinementMetric`).

    Parameters
    ----------
    scores : {"logits", "proba"}, default "logits"
        What ``update`` is given.
    **kwargs
        torchmetrics' own (``sync_on_compute``, ``process_group``, ...).

    Examples
    --------
    >>> import torch
    >>> from tabbench.torch import TSRefinementBrier
    >>> metric = TSRefinementBrier(scores="proba")
    >>> metric.update(torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]]),
    ...               torch.tensor([0, 1, 1, 0]))
    >>> round(metric.compute().item(), 3)
    0.424
    """

    def __init__(self, scores: ScoreType = "logits", **kwargs: Any) -> None:
        super().__init__("ts_ref_brier", scores, **kwargs)
