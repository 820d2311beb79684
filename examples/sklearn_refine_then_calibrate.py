"""Refine, then calibrate with scikit-learn alone: early-stop an MLPClassifier on validation
TS-refinement, then temperature-scale it on the same validation set.

What ``pip install tabbench`` (no extra: numpy, scipy and scikit-learn) is enough for; CI runs
it in a fresh environment holding only the built wheel. One training run (``partial_fit``, one
epoch a call) is watched by two ``tabbench.stopping.EarlyStopping`` objects, one on validation
log loss (the usual criterion) and one on TS-refinement; each keeps a copy of the model at its
best epoch. Both copies are then temperature-scaled on the validation set
(``tabbench.calibration.TemperatureScaledClassifier`` around the frozen model). The data are
scikit-learn's bundled handwritten digits (1,797 rows, 10 classes), so nothing is downloaded.

    python examples/sklearn_refine_then_calibrate.py            # seconds
    python examples/sklearn_refine_then_calibrate.py --small    # fewer epochs (what CI runs)
"""

from __future__ import annotations

import argparse

import numpy as np
from sklearn.datasets import load_digits
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from tabbench.calibration import TemperatureScaledClassifier
from tabbench.stopping import EarlyStopping


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="at most 30 epochs (CI)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    X, y = load_digits(return_X_y=True)
    X_train, X_rest, y_train, y_rest = train_test_split(
        X, y, test_size=0.4, stratify=y, random_state=0)
    X_val, X_test, y_val, y_test = train_test_split(
        X_rest, y_rest, test_size=0.5, stratify=y_rest, random_state=0)
    scaler = StandardScaler().fit(X_train)
    X_train, X_val, X_test = (scaler.transform(part) for part in (X_train, X_val, X_test))
    classes = np.unique(y_train)

    model = MLPClassifier(hidden_layer_sizes=(256, 256), learning_rate_init=1e-3,
                          batch_size=64, random_state=0)
    max_epochs, patience = (30, 8) if args.small else (200, 30)
    # the MLP outputs probabilities: scores="proba" (with logits, the default, as from torch)
    stoppers = {kind: EarlyStopping(kind, patience=patience, scores="proba")
                for kind in ("logloss", "ts_ref")}
    with threadpool_limits(args.threads):
        for _ in range(max_epochs):
            model.partial_fit(X_train, y_train, classes=classes)  # one epoch
            p_val = model.predict_proba(X_val)
            for stopper in stoppers.values():
                if not stopper.stopped:  # a criterion sees no epochs after it stopped training
                    stopper.step(p_val, y_val, state=model)  # keeps a copy of the model
            if all(stopper.stopped for stopper in stoppers.values()):
                break

        rows = []
        for kind, stopper in stoppers.items():
            best = stopper.best_state  # the model as it was after its best epoch
            calibrated = TemperatureScaledClassifier(FrozenEstimator(best)).fit(X_val, y_val)
            p_raw, p_ts = best.predict_proba(X_test), calibrated.predict_proba(X_test)
            rows.append((kind, stopper.best_epoch + 1, log_loss(y_test, p_raw, labels=classes),
                         log_loss(y_test, p_ts, labels=classes),
                         accuracy_score(y_test, calibrated.predict(X_test))))

    print(f"MLPClassifier on digits ({len(y_train)} train, {len(y_val)} val, "
          f"{len(y_test)} test rows)")
    head = f"{'stopping on':<14}{'best epoch':>11}{'test logloss':>14}{'+ TS':>10}{'accuracy':>10}"
    print(head)
    print("-" * len(head))
    for kind, epoch, ll, ll_ts, acc in rows:
        print(f"{kind:<14}{epoch:>11}{ll:>14.4f}{ll_ts:>10.4f}{acc:>10.4f}")


if __name__ == "__main__":
    main()
