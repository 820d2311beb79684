# What the data rules (data.smk) are given: tabbench.jobs.data.DataJobs. What downstream rule
# files use -
#   DATASETS             the suite's dataset names (before filtering)
#   kept_datasets()      the kept datasets; re-evaluated after the `collect_datasets`
#                        checkpoint, so call it inside input functions only
#   processed_path(ds), splits_path(ds)   (docs/design.md §3 contract)
#   check_dataset(ds, trained=False, study=False)   refuses, while the DAG is built, a dataset
#                        no chosen source knows, one not kept (trained), one not the study's
#                        (study), in one line
import os

from tabbench.data.pipeline import read_kept
from tabbench.jobs.data import DataJobs
from tabbench.jobs.messages import DataStageMessages

# a suite name the data jobs cannot take stops the run before any job, in one line
DATA_JOBS = DataJobs(
    CFG, os.path.join(workflow.basedir, "data", "demo"), RESULTS, STUDY_SETTINGS_FILE
)
DATASETS = DATA_JOBS.datasets
DATASET_PATTERN = "[^/]+"
DATA_MESSAGES = DataStageMessages(DATA_LAYOUT)
processed_path = DATA_LAYOUT.processed
splits_path = DATA_LAYOUT.splits
check_dataset = DATA_JOBS.check


def kept_datasets():
    return read_kept(checkpoints.collect_datasets.get().output.kept)


def fetch_jobs_pending():
    return any(j.rule.name == "fetch_dataset" for j in workflow.dag.needrun_jobs())


TARGET_FUNCTIONS.append(lambda wildcards: DATA_JOBS.targets(kept_datasets()))
# before the start hook that writes the folder's settings: a typed suite's unknown name is
# neither fetched nor remembered; then OpenML is probed once for the fetch jobs
START_FUNCTIONS.insert(
    0,
    lambda: DATA_JOBS.refuse_unknown_suite_names(
        SETTLED.stored is None and not drawing().trains_nothing
    ),
)
START_FUNCTIONS += [
    DATA_MESSAGES.start,
    lambda: DATA_JOBS.probe_openml(fetch_jobs_pending, shell),
]
END_FUNCTIONS += [DATA_MESSAGES.summary, DATA_MESSAGES.fetch_errors]
