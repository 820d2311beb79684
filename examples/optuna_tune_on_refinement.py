"""Tune on refinement with Optuna: every trial reports its validation TS-refinement after each
epoch and is pruned on it; the best trial is then temperature-scaled.

The paper's second message (Figs. G.3/G.4): hyperparameters, like epochs, are best chosen on the
refinement loss — here an MLP's learning rate, width and weight decay. Each trial trains with
``tabbench.stopping.EarlyStopping("ts_ref")``, calls ``trial.report(val_ts_ref, epoch)`` every
epoch and stops when Optuna's ``MedianPruner`` says so (``trial.should_prune()``); its value is
its best validation TS-refinement. The best trial's weights at its best epoch are kept and
temperature-scaled on the same validation set (``tabbench.calibration.TemperatureScaling``).

    python examples/optuna_tune_on_refinement.py            # MagicTelescope, 30 trials, minutes
    python examples/optuna_tune_on_refinement.py --small    # seconds (what CI runs)
"""

from __future__ import annotations

import numpy as np
import optuna
import torch
from _demo_data import load, parse_args, test_row
from torch_refine_then_calibrate import preprocess

from tabbench.calibration import TemperatureScaling
from tabbench.stopping import EarlyStopping


def objective(trial: optuna.Trial, tensors, n_classes: int, max_epochs: int, kept: dict
              ) -> float:
    """Train one sampled MLP; report validation TS-refinement per epoch; prune on it."""
    X_train, y_train, X_val, y_val = tensors
    lr = trial.suggest_float("lr", 1e-5, 3e-2, log=True)
    width = trial.suggest_categorical("width", [32, 128, 512])
    weight_decay = trial.suggest_float("weight_decay", 1e-6, 1e-1, log=True)
    torch.manual_seed(trial.number)
    model = torch.nn.Sequential(torch.nn.Linear(X_train.shape[1], width), torch.nn.ReLU(),
                                torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, n_classes))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    stopper = EarlyStopping("ts_ref", patience=max(4, max_epochs // 6))
    for epoch in range(max_epochs):
        model.train()
        for batch in torch.randperm(len(y_train)).split(256):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(X_train[batch]), y_train[batch]).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            stopped = stopper.step(model(X_val), y_val, state=model.state_dict())
        trial.report(stopper.history[-1], epoch)  # this epoch's validation TS-refinement
        if trial.should_prune():
            raise optuna.TrialPruned()
        if stopped:
            break
    if not kept or stopper.best_score < kept["score"]:  # the best trial's best weights
        kept.update(score=stopper.best_score, state=stopper.best_state, width=width,
                    epoch=stopper.best_epoch, number=trial.number)
    return stopper.best_score


def main() -> None:
    args = parse_args(__doc__, dataset="MagicTelescope",
                      small="3,000 rows, 8 trials of at most 8 epochs (CI)")
    torch.set_num_threads(args.threads)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    data = load(args)
    X_train, X_val, X_test = preprocess(data)
    tensors = (X_train, torch.as_tensor(data.y_train), X_val, data.y_val)
    n_trials, max_epochs = (8, 8) if args.small else (30, 100)
    n_classes = len(data.classes)
    kept: dict = {}
    study = optuna.create_study(
        direction="minimize", sampler=optuna.samplers.TPESampler(seed=0),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=2))
    study.optimize(lambda t: objective(t, tensors, n_classes, max_epochs, kept),
                   n_trials=n_trials)

    print(f"Optuna on {args.dataset}: {n_trials} trials, pruned on validation TS-refinement")
    print(f"{'trial':>5} {'state':>8} {'epochs':>7} {'val ts_ref':>11}  params")
    for t in study.trials:
        value = min(t.intermediate_values.values()) if t.intermediate_values else np.nan
        params = ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in t.params.items())
        print(f"{t.number:>5} {t.state.name:>8} {len(t.intermediate_values):>7} "
              f"{value:>11.4f}  {params}")
    n_pruned = sum(t.state == optuna.trial.TrialState.PRUNED for t in study.trials)
    print(f"pruned: {n_pruned} of {n_trials}")

    width = kept["width"]  # rebuild the best trial's network, restore its best epoch
    model = torch.nn.Sequential(torch.nn.Linear(X_train.shape[1], width), torch.nn.ReLU(),
                                torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, n_classes))
    model.load_state_dict(kept["state"])
    with torch.no_grad():
        val_logits, test_logits = model(X_val).numpy(), model(X_test).numpy()
    ts = TemperatureScaling().fit(val_logits, data.y_val)  # then calibrate
    p_raw = torch.softmax(torch.as_tensor(test_logits, dtype=torch.float64), 1).numpy()
    row = test_row("ts_ref", kept["epoch"], data, p_raw, ts.predict_proba(test_logits))
    print(f"best trial {kept['number']} (epoch {kept['epoch']}): val ts_ref {kept['score']:.4f}, "
          f"test logloss {row['logloss']:.4f} -> {row['logloss_ts']:.4f} after TS, "
          f"accuracy {row['accuracy']:.4f}")


if __name__ == "__main__":
    main()
