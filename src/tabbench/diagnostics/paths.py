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


def runs_file(results: str | Path, model: str, dataset: str, split: int | str) -> Path:
    """The per-epoch records of one (model, dataset, split) (written by the train rule)."""
    return Path(results) / "runs" / model / dataset / f"split{split}.parquet"


def replay_npz(results: str | Path, model: str, dataset: str, split: int | str) -> Path:
    """Replayed logits of one (model, dataset, split)."""
    return Path(results) / REPLAY_DIR / model / dataset / f"split{split}.npz"


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


#: table key -> file name in the diagnostics folder (written by ``tabbench diagnose``)
DIAGNOSTIC_TABLE_FILES: dict[str, str] = {
    "selection": "selection_bias.parquet",  # per split × regime × stopping metric
    "selection_datasets": "selection_bias_datasets.parquet",  # per dataset (mean over splits)
    "optimism": "optimism_summary.parquet",
    "curve": "winners_curse.parquet",  # per split × stopping metric × subset size
    "curve_summary": "winners_curse_summary.parquet",
    "regret": "regret_summary.parquet",
    "scores": "calibrators.parquet",  # per split × regime × stopping × calibrator
    "calibrators_relative": "calibrators_relative.parquet",  # per dataset, vs TS
    "calibrators_summary": "calibrators_summary.parquet",
    "reliability": "reliability.parquet",  # pooled and example-dataset diagrams
    "reliability_ece": "reliability_ece.parquet",
    "cost": "replay_cost.parquet",  # per replayed split
    "cost_summary": "replay_cost_summary.parquet",
}
DIAGNOSTIC_OTHER_FILES: dict[str, str] = {"markdown": "diagnostics.md", "meta": "meta.json"}

#: stems of the diagnostic figures (``results/figures/{stem}.{pdf,png}``), in drawing order
DIAGNOSTIC_FIGURE_STEMS: tuple[str, ...] = (
    "diag_reliability",
    "diag_reliability_example",
    "diag_calibrators",
    "diag_winners_curse",
    "diag_regret",
)


def results_of_diagnostics_dir(folder: str | Path) -> Path:
    """The results folder of a diagnostics folder (inverse of :func:`diagnostics_dir`)."""
    folder = Path(folder)
    depth = len(Path(DIAGNOSTICS_SUMMARY_DIR).parts)
    if folder.parts[-depth:] != Path(DIAGNOSTICS_SUMMARY_DIR).parts:
        raise ValueError(f"{folder} is not a <results>/{DIAGNOSTICS_SUMMARY_DIR} folder")
    return folder.parents[depth - 1]
