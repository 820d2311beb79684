"""Where the diagnostics' artefacts live, in one place (so a future ``tabbench.layout`` can
take them over by moving this file).

``results/replay/{model}/{dataset}/split{i}.npz`` + ``.json``  replayed logits and sidecar
``results/summary/diagnostics/``                           diagnostic tables (+ Markdown)
``results/figures/diag_*.{pdf,png}``                        diagnostic figures
"""

from __future__ import annotations

from pathlib import Path

REPLAY_DIR = "replay"
DIAGNOSTICS_SUMMARY_DIR = "summary/diagnostics"


def runs_file(results: str | Path, model: str, dataset: str, split: int) -> Path:
    """The per-epoch records of one (model, dataset, split) (written by the train rule)."""
    return Path(results) / "runs" / model / dataset / f"split{int(split)}.parquet"


def replay_npz(results: str | Path, model: str, dataset: str, split: int) -> Path:
    """Replayed logits of one (model, dataset, split)."""
    return Path(results) / REPLAY_DIR / model / dataset / f"split{int(split)}.npz"


def replay_sidecar(npz: str | Path) -> Path:
    """``.../split0.npz`` -> ``.../split0.json``: the (config, epoch) of every array, the
    self-check's numbers and the replay's cost."""
    npz = Path(npz)
    return npz.with_suffix(".json")


def diagnostics_dir(results: str | Path) -> Path:
    """Folder of the diagnostic tables."""
    return Path(results) / DIAGNOSTICS_SUMMARY_DIR


def figures_dir(results: str | Path) -> Path:
    return Path(results) / "figures"


def replay_key(regime: str, stopping: str) -> str:
    """``{regime}__{stopping}``: the suffix of a replayed selection's arrays."""
    return f"{regime}__{stopping}"


def logits_key(part: str, regime: str, stopping: str) -> str:
    """``val_logits__{regime}__{stopping}`` / ``test_logits__...``."""
    if part not in ("val", "test"):
        raise ValueError(f"part must be 'val' or 'test', got {part!r}")
    return f"{part}_logits__{replay_key(regime, stopping)}"
