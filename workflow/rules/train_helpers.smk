# What the train, select and replay rules (train.smk, select.smk, diagnostics.smk) are given:
# tabbench.jobs.train.TrainJobs. Needs from data.smk (or a stand-in): processed_path,
# splits_path, kept_datasets, check_dataset.
from tabbench.jobs.train import TrainJobs

TRAIN_JOBS = TrainJobs(CFG, STUDY_SETTINGS_FILE)
MODEL_PATTERN = TRAIN_JOBS.model_pattern


def train_input(wildcards):
    return TRAIN_JOBS.train_input(wildcards, check_dataset, processed_path, splits_path)


def train_targets(wildcards):
    return TRAIN_JOBS.runs_targets(kept_datasets())


TARGET_FUNCTIONS.append(train_targets)


def select_input(wildcards):
    return TRAIN_JOBS.select_input(wildcards, check_dataset)


def study_selected(wildcards):
    return TRAIN_JOBS.selected_targets(kept_datasets())
