"""Refine, then calibrate with PyTorch: early-stop an MLP on validation TS-refinement, then
temperature-scale on the same validation set.

One training run is watched by two ``tabbench.stopping.EarlyStopping`` objects, one on
validation log loss (the usual criterion) and one on TS-refinement; each keeps a copy of the
weights at its best epoch. Both models are then temperature-scaled on their validation logits
(``tabbench.calibration.TemperatureScaling``). Same run, same seeds: only the stopping
criterion differs.

    python examples/torch_refine_then_calibrate.py            # MagicTelescope, ~1 min
    python examples/torch_refine_then_calibrate.py --small    # seconds (what CI runs)
"""

from __future__ import annotations

import numpy as np
import torch
from _demo_data import load, parse_args, report, test_row
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from tabbench.calibration import TemperatureScaling
from tabbench.stopping import EarlyStopping


def preprocess(data) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Standardised numericals (median-imputed) + one-hot categoricals, fit on train."""
    num = [c for c in data.X_train.columns if c not in data.categorical]
    prep = ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), num),
        ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), data.categorical),
    ])
    parts = [prep.fit_transform(data.X_train), prep.transform(data.X_val),
             prep.transform(data.X_test)]
    return tuple(torch.as_tensor(np.asarray(p, dtype=np.float32)) for p in parts)


def main() -> None:
    args = parse_args(__doc__, dataset="MagicTelescope", small="3,000 rows, 12 epochs (CI)")
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)

    data = load(args)
    X_train, X_val, X_test = preprocess(data)
    y_train = torch.as_tensor(data.y_train)
    n_classes = len(data.classes)
    model = torch.nn.Sequential(
        torch.nn.Linear(X_train.shape[1], 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, n_classes),
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    max_epochs, patience = (12, 4) if args.small else (200, 30)
    stoppers = {kind: EarlyStopping(kind, patience=patience) for kind in ("logloss", "ts_ref")}

    for _ in range(max_epochs):
        model.train()
        for batch in torch.randperm(len(y_train)).split(256):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(X_train[batch]), y_train[batch]).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_logits = model(X_val)
        # with one criterion: `if stopper.step(val_logits, y_val, state=...): break`
        for stopper in stoppers.values():
            if not stopper.stopped:  # a criterion sees no epochs after it stopped training
                stopper.step(val_logits, data.y_val, state=model.state_dict())
        if all(stopper.stopped for stopper in stoppers.values()):
            break

    rows = []
    for kind, stopper in stoppers.items():
        model.load_state_dict(stopper.best_state)  # the weights of the best epoch
        with torch.no_grad():
            val_logits, test_logits = model(X_val).numpy(), model(X_test).numpy()
        ts = TemperatureScaling().fit(val_logits, data.y_val)
        p_raw = torch.softmax(torch.as_tensor(test_logits, dtype=torch.float64), 1).numpy()
        rows.append(test_row(kind, stopper.best_epoch, data, p_raw,
                             ts.predict_proba(test_logits)))
    report(f"MLP on {args.dataset}", data, rows)
    print("(best round = best epoch, 0-based)")


if __name__ == "__main__":
    main()
