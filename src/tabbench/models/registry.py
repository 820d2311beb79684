"""The registry of models: the one place that says which models exist and how they train.

A model is a :class:`ModelSpec` declared as an entry point of the group ``tabbench.models`` —
tabbench's own (:mod:`tabbench.models.builtin`, declared in its ``pyproject.toml``) and any
installed package's:

```toml
[project.entry-points."tabbench.models"]
lightgbm = "my_package.registration:LIGHTGBM"
```

The spec names its trainer and its search space as ``"module:attribute"`` / module strings,
imported only when that model is asked for: reading the registry (the workflow does so when it
parses, the CLI when it starts) imports neither PyTorch nor any model library, and asking for
XGBoost never imports PyTorch.

Everything model-specific follows from the spec: the trainer (:func:`get_trainer`), the search
space (:func:`tabbench.search.sampling.get_space`), the ``epochs`` config keys and their paper
values (:func:`epochs_key`, :func:`paper_epochs`), whether its jobs claim a GPU (``network``),
its figure label, and its run-wide trainer options (config key ``<model>_<option>``, CLI flag
``--<model>-<option>``; :class:`TrainerOption`). So adding a model takes its own modules, one
entry point and its tests — no edit of the config schema, the presets or the workflow.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType, ModuleType
from typing import Any

import yaml

from tabbench.core.nulls import is_null
from tabbench.core.plugins import check_id, load_object, load_registrations

#: the entry-point group of models
GROUP = "tabbench.models"


@dataclass(frozen=True)
class TrainerOption:
    """A run-wide setting of a model's trainer: one value for every config of a run (unlike a
    config's params, the search space), typically a deliberate deviation a user may switch
    (docs/deviations.md). Passed as ``get_trainer(model, <name>=value)``; from the workflow
    config key ``<model>_<name>`` and the ``tabbench train`` flag ``--<model>-<name>`` (dashes).

    Parameters
    ----------
    name : str
        The option's name (a lower-case identifier).
    default : object
        Its value unless a run sets it; None may mean "off" (e.g. no cap).
    check : callable
        ``check(value)`` returns the value to use or raises ValueError saying what is
        allowed; it must accept ``default``.
    help : str, default ""
        One line for the CLI's and the configuration reference's help.
    """

    name: str
    default: Any
    check: Callable[[Any], Any]
    help: str = ""

    def __post_init__(self) -> None:
        check_id(self.name, "a trainer option's name")

    def config_key(self, model: str) -> str:
        return f"{model}_{self.name}"

    def cli_flag(self, model: str) -> str:
        return "--" + self.config_key(model).replace("_", "-")

    @staticmethod
    def cli_text(value: Any) -> str:
        """How a value is written after the CLI flag (None as ``none``, a null spelling).

        Parameters
        ----------
        value : object
            The option's value.

        Returns
        -------
        str
            Its text on the command line.
        """
        return "none" if value is None else str(value)

    def parse(self, value: Any) -> Any:
        """The option's value from config.yaml, ``--config`` or the CLI flag: text is read as a
        YAML scalar (``1000`` is an int, a null spelling is None, as everywhere in the config),
        then :attr:`check` decides.

        Parameters
        ----------
        value : object
            The value as given (text from the CLI or ``--config``).

        Returns
        -------
        object
            The value to use.

        Raises
        ------
        ValueError
            Saying what is allowed.
        """
        if isinstance(value, str):

            value = None if is_null(value) else yaml.safe_load(value)
        return self.check(value)


@dataclass(frozen=True)
class ModelSpec:
    """One model family.

    Parameters
    ----------
    name : str
        The model's name: a lower-case identifier (config values, paths, CLI flags).
    trainer : str or callable
        ``"module:Class"`` of a :class:`tabbench.models.base.Trainer` (or the class itself),
        built as ``Class(**options)``.
    search_space : str or module
        The module (name, or the module) with ``DEFAULT_CONFIG`` (config 0) and
        ``suggest(trial)`` (configs 1..n).
    epochs_keys : tuple of (str, str)
        The ``epochs`` config keys of config 0 and of configs ≥ 1 — the same key when every
        config trains equally long (XGBoost: ``xgboost_default`` 100 and ``xgboost_tuned``
        1000 rounds, paper App. G.5).
    paper_epochs : Mapping of str to int
        Every key's value under the paper's protocol, which every preset uses unless it names
        the key.
    network : bool, default False
        Trained with PyTorch, so its jobs get ``device`` and claim a GPU under
        ``device: cuda``.
    label : str, default ""
        Its name in figures (empty: ``name``).
    options : tuple of TrainerOption, default ()
        Its trainer options.
    epoch_name : str, default "epoch"
        What one of its epochs is called in figures and logs (``"boosting round"`` for
        boosted trees).
    """

    name: str
    trainer: str | Callable[..., Any]
    search_space: str | ModuleType
    epochs_keys: tuple[str, str]
    paper_epochs: Mapping[str, int]
    network: bool = False
    label: str = ""
    options: tuple[TrainerOption, ...] = field(default=())
    epoch_name: str = "epoch"

    def __post_init__(self) -> None:
        check_id(self.name, "a model's name")
        keys = tuple(self.epochs_keys)
        if len(keys) != 2:
            raise ValueError(f"model {self.name!r}: epochs_keys must be (config 0's key, "
                             f"configs >= 1's key), got {self.epochs_keys!r}")
        for key in keys:
            check_id(key, f"model {self.name!r}: an epochs key")
        if set(self.paper_epochs) != set(keys):
            raise ValueError(f"model {self.name!r}: paper_epochs must give exactly the keys "
                             f"{sorted(set(keys))}, got {sorted(self.paper_epochs)}")
        for key, n in self.paper_epochs.items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise ValueError(f"model {self.name!r}: paper_epochs[{key!r}] must be an "
                                 f"integer >= 1, got {n!r}")
        names = [o.name for o in self.options]
        if len(set(names)) != len(names):
            raise ValueError(f"model {self.name!r}: trainer options named twice: {names}")
        object.__setattr__(self, "epochs_keys", keys)
        object.__setattr__(self, "paper_epochs", MappingProxyType(dict(self.paper_epochs)))
        object.__setattr__(self, "options", tuple(self.options))
        if not self.label:
            object.__setattr__(self, "label", self.name)

    def epochs_key(self, config_id: int) -> str:
        """The ``epochs`` key that sets how long ``config_id`` trains.

        Parameters
        ----------
        config_id : int
            0 (the default config) or a sampled config's id.

        Returns
        -------
        str
            One of :attr:`epochs_keys`.
        """
        return self.epochs_keys[0] if int(config_id) == 0 else self.epochs_keys[1]

    def option(self, name: str) -> TrainerOption:
        for o in self.options:
            if o.name == name:
                return o
        raise KeyError(name)


def _epochs_key_conflict(spec: ModelSpec, loaded: Mapping[str, ModelSpec]) -> str | None:
    for other in loaded.values():
        shared = sorted(set(spec.epochs_keys) & set(other.epochs_keys))
        if shared:
            return f"epochs keys {shared} are already those of model {other.name!r}"
    return None


@functools.cache
def _registry() -> Mapping[str, ModelSpec]:
    loaded = load_registrations(GROUP, ModelSpec, lambda m: m.name,
                                conflict=_epochs_key_conflict)
    return MappingProxyType(loaded)


def get_models() -> Mapping[str, ModelSpec]:
    """name -> :class:`ModelSpec` of every registered model (built-ins first, in the order
    tabbench declares them, then the others by distribution and name)."""
    return _registry()


def model_names() -> tuple[str, ...]:
    return tuple(_registry())


#: the paper's models, in the order every table and figure shows them; the others follow by name
PAPER_MODELS = ("xgboost", "mlp", "realmlp")


def order_models(models: Iterable[str]) -> list[str]:
    """``models`` in display order: the paper's first (:data:`PAPER_MODELS`), then by name."""
    present = set(models)
    known = [m for m in PAPER_MODELS if m in present]
    return known + sorted(present - set(known))


def model_label(model: str) -> str:
    """The model's registered label (:class:`ModelSpec`), or its name for a model the registry
    does not know (e.g. results from someone else's install)."""
    spec = _registry().get(model)
    return model if spec is None else spec.label


def get_model(name: str) -> ModelSpec:
    """The registered model ``name``; a clear error naming the registered ones otherwise.

    Parameters
    ----------
    name : str
        A registered model's name.

    Returns
    -------
    ModelSpec
        Its registration.

    Raises
    ------
    ValueError
        Naming the registered models, when ``name`` is none of them.
    """
    try:
        return _registry()[name]
    except KeyError:
        raise ValueError(
            f"unknown model {name!r}; registered models: {', '.join(_registry())} "
            f"(entry-point group {GROUP!r})"
        ) from None


def reload_registry() -> None:
    """Forget the loaded registry (the next use reads the entry points again)."""
    _registry.cache_clear()


def is_network(name: str) -> bool:
    """Whether ``name`` trains with PyTorch (gets ``device``, claims a GPU slot)."""
    return get_model(name).network


def epochs_key(model: str, config_id: int) -> str:
    """The ``epochs`` config key that sets how long ``config_id`` of ``model`` trains."""
    return get_model(model).epochs_key(config_id)


def paper_epochs() -> dict[str, int]:
    """Every registered ``epochs`` key with its value under the paper's protocol."""
    out: dict[str, int] = {}
    for spec in _registry().values():
        out.update(spec.paper_epochs)
    return out


def n_epochs_for(model: str, config_id: int, epochs: Mapping[str, int]) -> int:
    """Epochs (rounds) for ``config_id`` of ``model`` from the resolved ``epochs`` config."""
    key = epochs_key(model, config_id)
    if key not in epochs or epochs[key] is None:
        raise ValueError(f"epochs.{key} is not set (have {dict(epochs)})")
    n = int(epochs[key])
    if n < 1:
        raise ValueError(f"epochs.{key} must be >= 1, got {n}")
    return n


def resolve_trainer_options(model: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` of ``model`` checked, with the defaults filled in; a clear error for an option
    the model does not take (e.g. the MLP's one-hot cap given to XGBoost) or a bad value."""
    spec = get_model(model)
    known = {o.name: o for o in spec.options}
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(
            f"model {model!r} takes no trainer option {unknown}; "
            f"it takes {sorted(known) or 'none'}"
        )
    out = {name: o.default for name, o in known.items()}
    out.update({name: known[name].check(value) for name, value in options.items()})
    return out


def non_default_options(model: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The resolved options of ``model`` that differ from their defaults (sorted by name)."""
    spec = get_model(model)
    resolved = resolve_trainer_options(model, options)
    return {k: v for k, v in sorted(resolved.items()) if v != spec.option(k).default}


def epoch_name(model: str) -> str:
    """What an epoch of ``model`` is called (its registration's ``epoch_name``); ``"epoch"`` for
    a model the registry does not know (e.g. results from someone else's install)."""
    spec = _registry().get(model)
    return "epoch" if spec is None else spec.epoch_name


def get_trainer(name: str, **options: Any) -> Any:
    """A fresh trainer (:class:`tabbench.models.base.Trainer`) for model ``name``, built with
    the run-wide ``options`` (checked; left out = the default)."""
    spec = get_model(name)
    checked = resolve_trainer_options(name, options)
    cls = load_object(spec.trainer) if isinstance(spec.trainer, str) else spec.trainer
    return cls(**{k: checked[k] for k in options})


def get_search_space(name: str) -> Any:
    """The search space of model ``name``: an object (usually a module) with
    ``DEFAULT_CONFIG`` and ``suggest(trial)``."""
    space = get_model(name).search_space
    return importlib.import_module(space) if isinstance(space, str) else space
