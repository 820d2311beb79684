# Helpers of workflow/rules/diagnostics.smk (kept apart from the rules, as Snakemake's linter
# asks). Needs common.smk (NotARerunTrigger), data_helpers.smk (processed_path, splits_path,
# kept_datasets), train_helpers.smk (model_names, is_network, train_gpus, train_gpu_flags,
# train_option_flags) and report_helpers.smk (REGENERATE_FILES, REGENERATE_INPUT_FUNCTIONS) to
# be included first.
#
# Replay files are *planned* (missing ones retrained) only when this invocation asks for the
# target `replay` or `diagnostics`; then the regenerate job waits for them. Under any other
# target (`figures`, `report`, `all`) the regenerate job uses the replay files present as they
# are (tabbench.report.redraw.regenerate_inputs; the fresh ones, newer than their runs file,
# are drawn) and no replay is scheduled.
from snakemake.exceptions import IncompleteCheckpointException

from tabbench.core.layout import replay_sidecar
from tabbench.settings.folder import ResultsFolder

REPLAY_NPZ = RESULTS_LAYOUT.replay("{model}", "{dataset}", "{split}")
REPLAY_SIDECAR = str(replay_sidecar(REPLAY_NPZ))
# relative tolerance of the replay's self-check (CPU training reproduces the records exactly)
REPLAY_RTOL = float(CFG["replay_rtol"])
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


def diagnostics_pairs():
    """The study's (model, dataset) pairs, or, where the data checkpoint has not run (e.g. on
    a colleague's folder), the complete results the folder holds with their runs files.
    """
    try:
        return sorted((m, d) for m in CFG["models"] for d in kept_datasets())
    except IncompleteCheckpointException:
        complete = ResultsFolder.open(RESULTS).complete_results()
        cached = [(r.model, r.dataset) for r in complete if r.runs]
        if cached:
            return cached
        raise  # nothing cached: a fresh study, let Snakemake run the checkpoint first


def replay_targets(wildcards):
    """Every replay file of the pairs (target `replay`), with its sidecar."""
    return [
        path
        for m, d in diagnostics_pairs()
        for s in range(CFG["n_splits"])
        for path in (
            RESULTS_LAYOUT.replay(m, d, s),
            str(replay_sidecar(RESULTS_LAYOUT.replay(m, d, s))),
        )
    ]


def replays_to_wait_for(wildcards):
    """What the regenerate job waits for under `replay`/`diagnostics`: every replay file."""
    return replay_targets(wildcards) if replay_planned() else []


def replay_flags(wildcards):
    """Every option of `tabbench replay` but the paths. Not a rerun trigger: a replay is
    determined by its runs file (whose change reruns it through the file's time), and seed,
    device, one-hot cap or tolerance never change what a correct replay writes — so a changed
    option never makes `figures` retrain anything. The tie rule (config epoch_ties) does choose
    what is replayed, but is not a trigger either, so that a folder replayed without a tie rule
    recorded is not replayed again: after editing it, `--forcerun replay_split` (until then the
    diagnostics count those replays as stale and leave them out)."""
    return NotARerunTrigger(
        f" --seed {CFG['seed']} --device {replay_device(wildcards.model)}"
        f" --rtol {REPLAY_RTOL:g} --epoch-ties {CFG['epoch_ties']}"
        f"{train_gpu_flags(wildcards)}{replay_option_flags(wildcards)}"
    )


REGENERATE_INPUT_FUNCTIONS.append(replays_to_wait_for)
