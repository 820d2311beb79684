# Helpers of workflow/rules/diagnostics.smk (kept apart from the rules, as Snakemake's linter
# asks). Needs common.smk, data_helpers.smk (processed_path, splits_path, kept_datasets),
# train_helpers.smk (model_names, is_network, train_gpus, train_gpu_flags, train_option_flags,
# NotARerunTrigger) and report_helpers.smk (figure_outputs) to be included first.
#
# Two modes, as for the summary (report.smk):
#   * the (model, dataset) pairs are the study's (data checkpoint done) or, without it, those
#     whose runs files are all in results/ (cache mode);
#   * replay files are *planned* (missing ones retrained) only when this invocation asks for
#     the target `replay` or `diagnostics`; any other target (`figures`, `report`, `all`) uses
#     the replay files present and up to date (newer than their runs file) and never schedules
#     a replay.
import shlex
from pathlib import Path

from snakemake.exceptions import IncompleteCheckpointException

from tabbench.diagnostics.paths import (
    DIAGNOSTIC_FIGURE_STEMS,
    DIAGNOSTIC_OTHER_FILES,
    DIAGNOSTIC_TABLE_FILES,
    results_of_diagnostics_dir,
)
from tabbench.layout import replay_sidecar

DIAGNOSTICS_DIR = RESULTS_LAYOUT.diagnostics_dir
REPLAY_NPZ = RESULTS_LAYOUT.replay("{model}", "{dataset}", "{split}")
REPLAY_SIDECAR = str(replay_sidecar(REPLAY_NPZ))
# relative tolerance of the replay's self-check (CPU training reproduces the records exactly)
REPLAY_RTOL = float(CFG.get("replay_rtol") or 1e-5)
PLANNING_TARGETS = {"replay", "diagnostics"}

# What the replay shares with training (train_helpers.smk), in one place: the models (rule
# wildcard), the device of a model's jobs, and its trainer-option flags (e.g. the MLP's one-hot
# cap), which `tabbench replay` takes exactly as `tabbench train` does.
REPLAY_MODEL_PATTERN = "|".join(sorted(model_names()))


def replay_device(model):
    return CFG["device"] if is_network(model) else "cpu"


def replay_option_flags(wildcards):
    return train_option_flags(wildcards)


def replay_planned():
    """Whether the requested targets include `replay` or `diagnostics` (only then are replay
    jobs planned; see the top of this file)."""
    return bool(set(requested_targets()) & PLANNING_TARGETS)


def _splits():
    return range(cache_n_splits() if reads_cache_only() else CFG["n_splits"])


def cached_runs_pairs():
    """The complete (model, dataset) results of the folder (tabbench.layout.complete_results,
    as for the paper's figures) that have their runs files, which the diagnostics read.
    """
    return [(r.model, r.dataset) for r in cached_results() if r.runs]


def diagnostics_pairs():
    """Cached results under a figures/report target, else the study's pairs (or the cached
    ones where the data checkpoint has not run, e.g. on a colleague's folder)."""
    if reads_cache_only():
        return cached_runs_pairs()
    try:
        # sorted as complete_results sorts: the same pairs give the same `--pairs` parameter
        # (a rerun trigger) whether the study or a figures target computed them
        return sorted((m, d) for m in CFG["models"] for d in kept_datasets())
    except IncompleteCheckpointException:
        cached = cached_runs_pairs()
        if cached:
            return cached
        raise  # nothing cached: a fresh study, let Snakemake run the checkpoint first


def replay_targets(wildcards):
    """Every replay file of the pairs (target `replay`)."""
    return [
        RESULTS_LAYOUT.replay(m, d, s)
        for m, d in diagnostics_pairs()
        for s in _splits()
    ]


def diagnose_runs(wildcards):
    return [
        str(RESULTS_LAYOUT.runs(m, d, s))
        for m, d in diagnostics_pairs()
        for s in _splits()
    ]


def _fresh(model, dataset, split):
    npz = Path(RESULTS_LAYOUT.replay(model, dataset, split))
    side, runs = replay_sidecar(npz), Path(RESULTS_LAYOUT.runs(model, dataset, split))
    return (
        npz.exists()
        and side.exists()
        and runs.exists()
        and side.stat().st_mtime >= runs.stat().st_mtime
    )


def diagnose_replays(wildcards):
    """Replay files (and sidecars) the diagnostics read: all of them when the replay is
    requested, else those present and fresh."""
    planned = replay_planned()
    out = []
    for m, d in diagnostics_pairs():
        for s in _splits():
            if planned or _fresh(m, d, s):
                npz = Path(RESULTS_LAYOUT.replay(m, d, s))
                out += [str(npz), str(replay_sidecar(npz))]
    return out


def diagnose_pairs_arg(wildcards):
    return " ".join(shlex.quote(f"{m}/{d}") for m, d in diagnostics_pairs())


def replay_flags(wildcards):
    """Every option of `tabbench replay` but the paths. Not a rerun trigger: a replay is
    determined by its runs file (whose change reruns it through the file's time), and seed,
    device, one-hot cap or tolerance never change what a correct replay writes — so a changed
    option never makes `figures` retrain anything."""
    return NotARerunTrigger(
        f" --seed {CFG['seed']} --device {replay_device(wildcards.model)}"
        f" --rtol {REPLAY_RTOL:g}{train_gpu_flags(wildcards)}{replay_option_flags(wildcards)}"
    )


def diagnostic_tables():
    return [
        f"{DIAGNOSTICS_DIR}/{name}"
        for name in {**DIAGNOSTIC_TABLE_FILES, **DIAGNOSTIC_OTHER_FILES}.values()
    ]


def diagnostic_figure_outputs():
    return figure_outputs(DIAGNOSTIC_FIGURE_STEMS, category="Diagnostics")


def diagnostic_figure_files(wildcards):
    """The figure files as plain paths: what `figures` requires (the report() flags belong to
    the rule's outputs only; a flagged *input* would reach the report with an unresolved
    caption)."""
    return [
        RESULTS_LAYOUT.figure(stem, ext)
        for stem in DIAGNOSTIC_FIGURE_STEMS
        for ext in ("pdf", "png")
    ]


FIGURE_FUNCTIONS.append(diagnostic_figure_files)
