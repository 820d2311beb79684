"""The data of the library's docstring examples, defined once: a reader runs an example as
printed (each imports what it uses) and every example of a kind scores the same logits.

- :func:`four_samples`: four binary samples small enough to check by hand;
- :func:`noisy_logits`: a noisy classifier's logits, over-confident when ``scale`` is large
  (its log loss then exceeds its refinement, which temperature scaling recovers).
"""

from __future__ import annotations

import numpy as np


def four_samples() -> tuple[np.ndarray, np.ndarray]:
    """Logits (4, 2) and labels of four binary samples: three classified right (one of them
    barely), one wrong.

    Examples
    --------
    >>> from tabbench.metrics.examples import four_samples
    >>> logits, y = four_samples()
    >>> logits.argmax(axis=1), y
    (array([0, 1, 1, 0]), array([0, 1, 0, 0]))
    """
    return np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 1.5], [3.0, 0.0]]), np.array([0, 1, 0, 0])


def noisy_logits(n: int = 300, n_classes: int = 3, scale: float = 4.0,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Logits (n, K) and labels (n,) of a noisy classifier: labels uniform over the K classes,
    logits ``scale · (one_hot(y) + standard normal noise)``, from ``default_rng(seed)``.

    Examples
    --------
    >>> from tabbench.metrics import fit_temperature
    >>> from tabbench.metrics.examples import noisy_logits
    >>> logits, y = noisy_logits(300, 3, scale=4.0)
    >>> logits.shape, round(fit_temperature(logits, y), 3)  # over-confident: β < 1
    ((300, 3), 0.218)
    """
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, size=n)
    return scale * (np.eye(n_classes)[y] + rng.normal(size=(n, n_classes))), y
