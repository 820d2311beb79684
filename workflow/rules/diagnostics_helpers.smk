# What the replay rules (diagnostics.smk) are given: tabbench.jobs.train.TrainJobs (TRAIN_JOBS,
# train_helpers.smk: the replay rebuilds the train job's trainer). Replay files are *planned*
# (missing ones retrained) only when this invocation asks for `replay` or `diagnostics`; then
# the regenerate job waits for them. Under any other target the regenerate job uses the replay
# files present as they are (tabbench.report.drawing_state.regenerate_inputs) and no replay is
# scheduled.
from snakemake.exceptions import IncompleteCheckpointException

from tabbench.jobs.train import plans_replays

REPLAY_NPZ, REPLAY_SIDECAR = TRAIN_JOBS.replay_outputs


def replay_targets(wildcards):
    return TRAIN_JOBS.replay_targets(kept_datasets, IncompleteCheckpointException)


def replays_to_wait_for(wildcards):
    return replay_targets(wildcards) if plans_replays(requested_targets()) else []


REGENERATE_INPUT_FUNCTIONS.append(replays_to_wait_for)
