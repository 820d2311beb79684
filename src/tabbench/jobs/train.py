"""The train, replay and select rules' params, inputs, resources and targets
(workflow/rules/train.smk, diagnostics.smk, select.smk): one train job per (model, dataset,
split); a replay rebuilds the same trainer (its options and GPU claim are the train job's); a
selection per (model, dataset)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tabbench.core.layout import ResultsLayout, replay_sidecar
from tabbench.jobs.refusal import Refused
from tabbench.jobs.triggers import NotARerunTrigger, classified, flag, split_flags
from tabbench.models.registry import get_model, is_network, model_names
from tabbench.models.stacked.plan import STACKED, device_type, parse_members, training_path
from tabbench.settings.folder import ResultsFolder
from tabbench.settings.presets import n_configs_for
from tabbench.study.targets import MODEL, not_in_study
from tabbench.summary.stopping_rules import patiences_for

#: how a network job claims a GPU under device cuda
GPU_CLAIM_KEYS = ("allow_cpu_fallback", "gpu_lock_dir", "gpu_claim_timeout",
                  "gpu_jobs_per_device")
#: what a train job keeps for re-stopping and whether a resume retries recorded failures
KEEPING_KEYS = ("keep_for_restop", "restop_max_mb", "retry_failed")

#: a check of a dataset (``trained``, ``study``), as :meth:`tabbench.jobs.data.DataJobs.check`
DatasetCheck = Callable[..., None]


class TrainJobs:
    """The model-wise jobs of one run: its settled ``config`` and results folder, and the file
    that declares its study (None: config.yaml and the command line)."""

    def __init__(self, config: Mapping[str, Any], study_settings_file: str | None) -> None:
        self.config = config
        self.results = config["results_dir"]
        self.layout = ResultsLayout(self.results)
        self.study_settings_file = study_settings_file
        #: the model wildcard: the registered models only
        self.model_pattern = "|".join(sorted(model_names()))

    # --- checks and inputs ----------------------------------------------------------------

    def check_model(self, model: str) -> None:
        """Refuse a runs or selected target of a model the folder's study does not declare (a
        typo included), saying how to add it on purpose: its results would join the folder's
        figures and claims."""
        why = not_in_study(MODEL, model, self.config["models"], self.results,
                           self.study_settings_file, sorted(model_names()))
        if why is not None:
            raise Refused(why)

    def train_input(self, wildcards: Any, check_dataset: DatasetCheck,
                    processed: Callable[[str], str], splits: Callable[[str], str]
                    ) -> dict[str, str]:
        """The processed data and splits of the job's dataset: one of the study's, for one of
        its models."""
        self.check_model(wildcards.model)
        check_dataset(wildcards.dataset, trained=True, study=True)
        return {"processed": processed(wildcards.dataset), "splits": splits(wildcards.dataset)}

    def select_input(self, wildcards: Any, check_dataset: DatasetCheck) -> list[str]:
        """The runs files of every configured split of one (model, dataset) of the study."""
        self.check_model(wildcards.model)
        check_dataset(wildcards.dataset, trained=True, study=True)
        return [self.layout.runs(wildcards.model, wildcards.dataset, i)
                for i in range(self.config["n_splits"])]

    # --- params ---------------------------------------------------------------------------

    def device(self, model: str) -> str:
        """The configured device for network jobs; XGBoost-like models train on the CPU."""
        return self.config["device"] if is_network(model) else "cpu"

    def epochs_arg(self, model: str) -> str:
        """Only the epochs keys this model uses, so that changing another model's epochs does
        not rerun this model's jobs."""
        keys = sorted(set(get_model(model).epochs_keys))
        return " ".join(f"{k}={self.config['epochs'][k]}" for k in keys)

    def option_flags(self, model: str) -> dict[str, str]:
        """The model's trainer options (:class:`tabbench.models.registry.TrainerOption`) from
        their config keys ``<model>_<option>`` as config key -> flag text; empty for a model
        without options."""
        spec = get_model(model)
        return {option.config_key(spec.name):
                f" {option.cli_flag(spec.name)} "
                f"{option.cli_text(self.config[option.config_key(spec.name)])}"
                for option in spec.options}

    def members_flag(self, model: str) -> str:
        """``--members K|auto`` of a network job on the stacked path (docs/design.md §15), else
        empty: switching a folder between stacked and one config at a time retrains its
        network jobs (the two paths agree within float rounding, not bit for bit)."""
        if not is_network(model):
            return ""
        members = parse_members(self.config["network_members"])
        if training_path(self.device(model), members, True) != STACKED:
            return ""
        return f" --members {'auto' if members is None else members}"

    def gpu_flags(self, model: str) -> dict[str, str]:
        """The GPU-claim flags (:mod:`tabbench.core.gpu`) of a network job under device cuda."""
        if self.config["device"] == "cpu" or not is_network(model):
            return {}
        return {k: flag(k, self.config[k]) for k in GPU_CLAIM_KEYS}

    def train_flags(self, model: str) -> dict[str, str]:
        """Config key -> flag text of every setting a train job takes besides its paths, seed,
        epochs, configs and device."""
        c = self.config
        flags = {**self.option_flags(model), "network_members": self.members_flag(model),
                 **self.gpu_flags(model)}
        if is_network(model):
            flags["network_memory_gb"] = flag("network_memory_gb", c["network_memory_gb"])
        return {**flags, **{k: flag(k, c[k]) for k in KEEPING_KEYS}}

    def train_params(self) -> dict[str, Callable[[Any], Any]]:
        """The train job's params, per wildcards: the flags of the settings that change its
        records are plain text (a trigger: changing one retrains that model's jobs, and only
        those), the others a :class:`NotARerunTrigger`."""
        c = self.config

        def study(value: Callable[[str], Any], key: str) -> Callable[[Any], Any]:
            return lambda w: classified("train", value(w.model), (key,), c)

        return {
            "epochs": study(self.epochs_arg, "epochs"),
            "n_configs": study(lambda m: n_configs_for(c, m), "n_configs"),
            "seed": study(lambda m: c["seed"], "seed"),
            "device": study(self.device, "device"),
            "record_flags": lambda w: split_flags("train", self.train_flags(w.model), c)[0],
            "run_flags": lambda w: split_flags("train", self.train_flags(w.model), c)[1],
        }

    def gpus(self, wildcards: Any) -> int:
        """One ``gpu`` resource per network job on a GPU (claimed, or pinned with cuda:<i>)."""
        return int(device_type(self.config["device"]) == "cuda" and is_network(wildcards.model))

    def replay_params(self) -> dict[str, Callable[[Any], NotARerunTrigger]]:
        """Every option of ``tabbench replay`` but the paths, none a trigger: a replay is
        determined by its runs file (whose change reruns it), and seed, device, trainer
        options, tolerance or tie rule never change what a correct replay writes, so a changed
        option never makes ``figures`` retrain anything (after editing the tie rule,
        ``--forcerun replay_split``; until then the diagnostics leave those replays out)."""
        c = self.config

        def flags(w: Any) -> NotARerunTrigger:
            given = {"seed": flag("seed", c["seed"]),
                     "device": flag("device", self.device(w.model)),
                     "replay_rtol": f" --rtol {float(c['replay_rtol']):g}",
                     "epoch_ties": flag("epoch_ties", c["epoch_ties"]),
                     **self.gpu_flags(w.model), **self.option_flags(w.model)}
            triggers, others = split_flags("replay_split", given, c)
            assert not triggers, triggers
            return others

        return {"flags": flags}

    def select_params(self) -> dict[str, Any]:
        """The selection's tie rule and this model's patiences
        (:func:`tabbench.summary.stopping_rules.patiences_for`, the words after
        ``--patience``): another rule or patience selects other epochs; neither is a train
        param, so no training reruns."""
        c = self.config
        return {
            "ties": classified("select", c["epoch_ties"], ("epoch_ties",), c),
            "patience": lambda w: classified(
                "select", " ".join(map(str, patiences_for(c.get("patience"), w.model))),
                ("patience",), c),
        }

    # --- targets --------------------------------------------------------------------------

    def runs_targets(self, kept: list[str]) -> list[str]:
        """Every runs file of the study: models x kept datasets x splits."""
        return [self.layout.runs(m, ds, s) for m in self.config["models"] for ds in kept
                for s in range(self.config["n_splits"])]

    def selected_targets(self, kept: list[str]) -> list[str]:
        """Every selected file of the study: each model x each kept dataset."""
        return [self.layout.selected(m, d) for m in self.config["models"] for d in kept]

    # --- replay ---------------------------------------------------------------------------

    @property
    def replay_outputs(self) -> tuple[str, str]:
        """The replay job's outputs: the npz file and its sidecar, as patterns."""
        npz = self.layout.replay("{model}", "{dataset}", "{split}")
        return npz, str(replay_sidecar(npz))

    def diagnostics_pairs(self, kept: Callable[[], list[str]],
                          incomplete: type[BaseException]) -> list[tuple[str, str]]:
        """The study's (model, dataset) pairs, or, where the data stage's list of kept
        datasets is not made yet (``kept`` raises ``incomplete``: a colleague's folder), the
        complete results the folder holds with their runs files; with none, ``incomplete``
        goes on (a fresh study: the data stage comes first)."""
        try:
            return sorted((m, d) for m in self.config["models"] for d in kept())
        except incomplete:
            complete = ResultsFolder.open(self.results).complete_results()
            cached = [(r.model, r.dataset) for r in complete if r.runs]
            if cached:
                return cached
            raise

    def replay_targets(self, kept: Callable[[], list[str]], incomplete: type[BaseException]
                       ) -> list[str]:
        """Every replay file of the pairs (:meth:`diagnostics_pairs`), with its sidecar."""
        return [path for m, d in self.diagnostics_pairs(kept, incomplete)
                for s in range(self.config["n_splits"])
                for path in (self.layout.replay(m, d, s),
                             str(replay_sidecar(self.layout.replay(m, d, s))))]


#: the targets under which replay jobs are planned (and the regenerate job waits for them);
#: under any other the drawing uses the replay files present as they are
REPLAY_PLANNING_TARGETS = frozenset({"replay", "diagnostics"})


def plans_replays(requested: list[str]) -> bool:
    """Whether the requested targets include ``replay`` or ``diagnostics``."""
    return bool(set(requested) & REPLAY_PLANNING_TARGETS)
