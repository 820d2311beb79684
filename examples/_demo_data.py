"""Load one of tabbench's bundled datasets (data/demo/*.parquet) as train/validation/test parts.

Shared by the examples so that each of them shows only the modelling. Any data works the same
way: the recipe needs a validation set the model is not trained on, used twice (to stop, then
to fit the temperature), and a test set to see the result.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split

DEMO_DIR = Path(__file__).resolve().parents[1] / "data" / "demo"


@dataclass
class Split:
    X_train: pd.DataFrame
    y_train: np.ndarray
    X_val: pd.DataFrame
    y_val: np.ndarray
    X_test: pd.DataFrame
    y_test: np.ndarray
    classes: np.ndarray  # original labels; y_* are codes 0..K-1 into it

    @property
    def categorical(self) -> list[str]:
        return [c for c in self.X_train.columns if isinstance(self.X_train[c].dtype,
                                                              pd.CategoricalDtype)]


def load_demo(name: str = "adult", max_rows: int | None = None, seed: int = 0) -> Split:
    """60/20/20 stratified split of ``data/demo/<name>.parquet`` (target from MANIFEST.csv);
    ``max_rows`` subsamples first (stratified), for quick runs."""
    target = pd.read_csv(DEMO_DIR / "MANIFEST.csv").set_index("name").loc[name, "target"]
    X = pd.read_parquet(DEMO_DIR / f"{name}.parquet")
    classes, y = np.unique(X.pop(target).to_numpy(dtype=str), return_inverse=True)
    if max_rows is not None and len(X) > max_rows:
        X, _, y, _ = train_test_split(X, y, train_size=max_rows, stratify=y, random_state=seed)
    X_train, X_rest, y_train, y_rest = train_test_split(
        X, y, test_size=0.4, stratify=y, random_state=seed)
    X_val, X_test, y_val, y_test = train_test_split(
        X_rest, y_rest, test_size=0.5, stratify=y_rest, random_state=seed)
    return Split(X_train, y_train, X_val, y_val, X_test, y_test, classes)


def parse_args(doc: str, dataset: str = "adult", small: str = "3,000 rows, 200 rounds (CI)"
               ) -> argparse.Namespace:
    """The examples' command line: ``--dataset``, ``--small`` (a quick run), ``--threads``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--dataset", default=dataset, help="a name from data/demo/MANIFEST.csv")
    parser.add_argument("--small", action="store_true", help=small)
    parser.add_argument("--threads", type=int, default=2)
    return parser.parse_args()


def load(args: argparse.Namespace) -> Split:
    """The dataset of the command line (3,000 rows with ``--small``)."""
    return load_demo(args.dataset, max_rows=3000 if args.small else None)


def test_row(stopping: str, best: int, data: Split, p_raw: np.ndarray, p_ts: np.ndarray
             ) -> dict:
    """One stopping criterion's result: where it stopped, test log loss of the stopped model
    (``p_raw``) and after temperature scaling (``p_ts``), accuracy (scaling keeps the argmax)."""
    labels = range(len(data.classes))
    return {"stopping": stopping, "best": best,
            "logloss": log_loss(data.y_test, p_raw, labels=labels),
            "logloss_ts": log_loss(data.y_test, p_ts, labels=labels),
            "accuracy": accuracy_score(data.y_test, np.argmax(p_ts, axis=1))}


def report(title: str, data: Split, rows: list[dict]) -> None:
    """Print the dataset's sizes, then one line per stopping criterion: where it stopped and
    the test metrics."""
    print(f"{title} ({len(data.y_train)} train, {len(data.y_val)} val, "
          f"{len(data.y_test)} test rows)")
    head = f"{'stopping on':<14}{'best round':>11}{'test logloss':>14}{'+ TS':>10}{'accuracy':>10}"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['stopping']:<14}{r['best']:>11}{r['logloss']:>14.4f}{r['logloss_ts']:>10.4f}"
              f"{r['accuracy']:>10.4f}")
