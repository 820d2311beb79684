"""Early stopping on a refinement loss in any training loop (:class:`EarlyStopping`)."""

from __future__ import annotations

import copy
import math
from typing import Any

from tabbench._scores import ScoreType
from tabbench.stopping.loss import Scorer

# ---------------------------------------------------------------------------------------------
# Any training loop
# ---------------------------------------------------------------------------------------------


class EarlyStopping:
    """Early stopping on a refinement loss for PyTorch or any framework's training loop.

    Call :meth:`step` once per epoch with that epoch's validation logits and labels (and,
    optionally, the model state to keep); it returns True once ``patience`` epochs in a row
    have not improved the best loss by more than ``min_delta``. Then restore
    :attr:`best_state` and temperature-scale the model on the same validation set. In a
    PyTorch loop:

    ```python
    stopper = EarlyStopping("ts_ref", patience=16)
    for epoch in range(max_epochs):
        train_one_epoch(model)
        with torch.no_grad():
            val_logits = model(X_val)
        if stopper.step(val_logits, y_val, state=model.state_dict()):
            break
    model.load_state_dict(stopper.best_state)
    ```

    Parameters
    ----------
    kind : str, default "ts_ref"
        Any of :func:`stopping_kinds`; ``"logloss"`` (plain validation log loss) is the
        classic criterion, for comparisons.
    patience : int, default 10
        Steps in a row without improvement after which :meth:`step` returns True.
    min_delta : float, default 0.0
        The improvement over the best loss that counts as one.
    scores : {"logits", "proba"}, default "logits"
        What the loop passes to :meth:`step`; ``"proba"`` for probabilities.

    Attributes
    ----------
    history : list of float
        The loss of every step; NaN for non-finite logits, which never count as an
        improvement.
    best_epoch : int or None
        0-based index of the best step; None before any finite loss.
    best_score : float
        The best loss; +inf before any finite loss.
    best_state : object
        A deep copy of the ``state`` passed at the best step (a ``state_dict`` holds
        references to the live parameters, so it is copied, on its device).
    stopped : bool
        Whether the last :meth:`step` returned True.

    Examples
    --------
    Validation logits of a model that ranks ever better but grows over-confident from the
    third epoch on: log loss stops early, refinement does not.

    >>> import numpy as np
    >>> from tabbench.stopping import EarlyStopping
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, size=300)
    >>> noise = rng.normal(size=(300, 2))
    >>> stoppers = {kind: EarlyStopping(kind, patience=3) for kind in ("logloss", "ts_ref")}
    >>> for epoch in range(12):
    ...     signal, scale = 0.3 * (epoch + 1), 1.0 + max(0, epoch - 2) ** 2
    ...     logits = scale * (signal * np.eye(2)[y] + noise)
    ...     for stopper in stoppers.values():
    ...         if not stopper.stopped:
    ...             _ = stopper.step(logits, y, state=epoch)
    >>> {kind: stopper.best_state for kind, stopper in stoppers.items()}  # the best epochs
    {'logloss': 3, 'ts_ref': 11}
    """

    def __init__(
        self,
        kind: str = "ts_ref",
        patience: int = 10,
        min_delta: float = 0.0,
        scores: ScoreType = "logits",
    ) -> None:
        if int(patience) != patience or patience < 1:
            raise ValueError(f"patience must be a positive integer, got {patience!r}")
        if not min_delta >= 0:
            raise ValueError(f"min_delta must be >= 0, got {min_delta!r}")
        self._scorer = Scorer(kind, scores)
        self.kind, self.patience, self.min_delta, self.scores = kind, patience, min_delta, scores
        self.reset()

    def reset(self) -> None:
        """Forget every step (to reuse the object for another training run)."""
        self.history: list[float] = []
        self.best_epoch: int | None = None
        self.best_score: float = math.inf
        self.best_state: Any = None
        self.stopped = False
        self._since_best = 0

    def step(self, val_logits: Any, y_val: Any, state: Any = None) -> bool:
        """Score one epoch; True = stop now (``patience`` steps without improvement).

        Parameters
        ----------
        val_logits : array-like or tensor of shape (n_samples, n_classes) or (n_samples,)
            The epoch's validation outputs (logits, or probabilities with ``scores="proba"``).
        y_val : array-like or tensor of shape (n_samples,)
            Class codes 0..K−1.
        state : object, optional
            What to keep if this step is the best (e.g. ``model.state_dict()``); deep-copied.

        Returns
        -------
        bool
            True once ``patience`` steps in a row have not improved the best loss.
        """
        score = self._scorer(y_val, val_logits, strict=False)
        self.history.append(score)
        if score < self.best_score - self.min_delta:  # False for NaN
            self.best_score, self.best_epoch = score, len(self.history) - 1
            self.best_state = copy.deepcopy(state)
            self._since_best = 0
        else:
            self._since_best += 1
        self.stopped = self._since_best >= self.patience
        return self.stopped

    def __repr__(self) -> str:
        return (
            f"EarlyStopping(kind={self.kind!r}, patience={self.patience}, "
            f"min_delta={self.min_delta}, scores={self.scores!r})"
        )
