"""The names inside the diagnostics' artefacts: array keys of a replay file, table file names,
figure stems. Where the artefacts themselves live is :class:`tabbench.core.layout.ResultsLayout`'s
(``replay``, ``diagnostics_dir``), the one layout API.
"""

from __future__ import annotations

from pathlib import Path

from tabbench.core.layout import DIAGNOSTICS, SUMMARY


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
    """The results folder of a diagnostics folder (inverse of ``ResultsLayout.diagnostics_dir``)."""
    folder = Path(folder)
    if folder.parts[-2:] != (SUMMARY, DIAGNOSTICS):
        raise ValueError(f"{folder} is not a <results>/{SUMMARY}/{DIAGNOSTICS} folder")
    return folder.parents[1]
