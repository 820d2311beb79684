"""Stopping rules: when training would have stopped on one stopping metric's validation curve,
and which epoch it returns (docs/stopping_rules.md, docs/design.md §7).

A stopping *metric* (:mod:`tabbench.metrics.registry`) scores every epoch; a stopping *rule*
reads that curve as a training loop would, epoch by epoch, and says

* the epoch it **returns** (the checkpoint the model is restored to), and
* the epoch at which training **stops** (the compute the rule spends on that config).

Built in:

* ``best`` — the paper's rule: train the whole run, return its argmin (``stop`` = the last
  epoch). The default, and the only rule of a selected file without rule columns.
* ``patience`` with parameter *p* — what practitioners do (XGBoost's
  ``early_stopping_rounds``, Lightning's and Keras' ``EarlyStopping``, LightGBM's
  ``early_stopping``, :class:`tabbench.stopping.EarlyStopping`): stop at the first epoch
  that is *p* epochs past the best so far and return the best so far. A non-finite value never
  improves (it counts towards the patience, and epochs before the first finite value count
  too); ties follow the study's tie rule (``epoch_ties``): with ``first`` only a strictly lower
  value is an improvement, with ``last`` an equal one is too, so the returned epoch is the last
  of the tied best so far and the patience counts from it. A patience at least as long as the
  run never stops early and returns exactly what ``best`` returns.

A *stopping method* is then (metric, rule, ±TS): selection applies each rule per config and
across configs as before (the tuned regime's config is the one whose returned epoch has the
lowest validation value), and every selected row says its ``rule`` and ``patience`` (the rule's
parameter; empty for a rule without one) beside ``stopping`` (:mod:`tabbench.summary.select`).

**Which rules and parameters** (:func:`rule_choices`): every registered rule; a rule with a
parameter gets the values of the ``patience`` setting for the built-in ``patience`` rule (one
list for every model, or a mapping model -> list), else its registration's defaults per model
(:attr:`StoppingRule.default_params`). The built-in patience defaults are
:data:`NETWORK_PATIENCES` epochs for a network (``ModelSpec.network``) and
:data:`ROUND_PATIENCES` rounds for any other model; they cost no training (every epoch is
recorded), so they are on by default. The setting is a redraw setting: it changes selected
files and the summary, never a train job.

**Adding a rule** (an extension point like stopping metrics and models): a
:class:`StoppingRule` declared in the entry-point group ``tabbench.stopping_rules``::

    [project.entry-points."tabbench.stopping_rules"]
    smoothed = "my_package.rules:SMOOTHED"

``curve(values, ties, param)`` is the rule's definition on one config's curve (epochs in
order); ``blocks`` an optional vectorised form over many configs at once (selection of a full
study runs the rules over tens of millions of rows), held to ``curve`` by the tests.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from tabbench.core.plugins import check_id, load_registrations
from tabbench.models.registry import get_models

#: the entry-point group of stopping rules
GROUP = "tabbench.stopping_rules"

#: the rule every selection has and every old selection is (whole-run argmin)
BEST = "best"
#: the built-in rule whose parameters the ``patience`` setting gives
PATIENCE = "patience"
#: default patiences of a network, in epochs (its paper run: 256 epochs)
NETWORK_PATIENCES: tuple[int, ...] = (8, 16, 32)
#: default patiences of any other model (boosters), in rounds (their paper run: 1,000 rounds)
ROUND_PATIENCES: tuple[int, ...] = (20, 50, 200)

#: ``curve(values, ties, param)`` -> (position of the returned epoch or -1, position of the
#: epoch at which training stops), positions 0-based in the curve
CurveFn = Callable[[np.ndarray, str, "int | None"], tuple[int, int]]
#: ``blocks(values, epochs, starts, ties, param)`` -> (row of the returned epoch or -1 per
#: block, row of the stop epoch per block)
BlocksFn = Callable[[np.ndarray, np.ndarray, np.ndarray, str, "int | None"],
                    tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class StoppingRule:
    """One stopping rule (module docstring).

    ``id``: the ``rule`` value of selected rows (a lower-case identifier). ``label``: its name
    in figures and tables. ``curve``: its definition on one config's validation curve (see
    :data:`CurveFn`; ``values`` float64 with NaN/inf for unscored or diverged epochs, which a
    rule must never return). ``blocks``: optional vectorised form (:data:`BlocksFn`) over
    contiguous blocks of rows (one block per config, rows in epoch order; ``epochs`` the
    1-based epoch of each row); without it selection loops over blocks with ``curve``.
    ``parametrised``: it takes an integer parameter (in epochs), one selection per value.
    ``default_params(model)``: its values for a model when no setting gives them.
    ``description``: one line for docs and captions.
    """

    id: str
    label: str
    curve: CurveFn
    blocks: BlocksFn | None = None
    parametrised: bool = False
    default_params: Callable[[str], tuple[int, ...]] | None = None
    description: str = ""

    def __post_init__(self) -> None:
        check_id(self.id, "a stopping rule's id")
        if not callable(self.curve):
            raise ValueError(f"stopping rule {self.id!r}: curve must be callable")
        if self.blocks is not None and not callable(self.blocks):
            raise ValueError(f"stopping rule {self.id!r}: blocks must be callable or None")
        if self.parametrised and self.default_params is None:
            raise ValueError(f"stopping rule {self.id!r}: a parametrised rule needs "
                             "default_params (model -> its parameters)")


class RuleChoice(NamedTuple):
    """One rule with one parameter (None for a rule without one): a selection's ``rule`` and
    ``patience`` columns."""

    rule: str
    param: int | None = None

    @property
    def name(self) -> str:
        """``"best"``, ``"patience 20"``: how tables and figures name it."""
        return self.rule if self.param is None else f"{self.rule} {self.param}"


# --- the built-in rules -------------------------------------------------------------------------

#: how tied epochs are resolved: the first (the default) or the last of them (pytabkit's)
EPOCH_TIES = ("first", "last")
#: the rule of every selection made before the rule was a setting, and the default since
DEFAULT_EPOCH_TIES = "first"


def first_minima(values: np.ndarray, starts: np.ndarray, ties: str = DEFAULT_EPOCH_TIES
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Per block: (row index of the first minimum, or the last one with ``ties="last"``, the
    minimum); (-1, +inf) for a block with no finite value. ``values`` must be ordered by epoch
    inside each block."""
    if ties not in EPOCH_TIES:
        raise ValueError(f"epoch ties must be one of {EPOCH_TIES}, got {ties!r}")
    n = len(values)
    finite = np.isfinite(values)
    v = np.where(finite, values, np.inf)
    block_min = np.minimum.reduceat(v, starts) if n else np.empty(0)
    lengths = np.diff(np.append(starts, n))
    block_of_row = np.repeat(np.arange(len(starts)), lengths)
    hit = finite & (v == block_min[block_of_row])
    hit_rows = np.flatnonzero(hit)
    if ties == "last":
        hit_rows = hit_rows[::-1]
    # hit_rows in increasing (decreasing) order: the first occurrence of each block id is its
    # first (last) minimum
    blocks_hit, first = np.unique(block_of_row[hit_rows], return_index=True)
    index = np.full(len(starts), -1, dtype=np.int64)
    index[blocks_hit] = hit_rows[first]
    return index, block_min





def _check_ties(ties: str) -> None:
    if ties not in EPOCH_TIES:
        raise ValueError(f"epoch ties must be one of {EPOCH_TIES}, got {ties!r}")


def best_curve(values: np.ndarray, ties: str, param: int | None = None) -> tuple[int, int]:
    """The whole run's argmin (first or last of ties by ``ties``; -1 without a finite value);
    training stops at the last epoch."""
    _check_ties(ties)
    v = np.asarray(values, dtype=np.float64)
    finite = np.flatnonzero(np.isfinite(v))
    if len(finite) == 0:
        return -1, len(v) - 1
    hits = finite[v[finite] == v[finite].min()]
    return int(hits[0] if ties == "first" else hits[-1]), len(v) - 1


def best_blocks(values: np.ndarray, epochs: np.ndarray, starts: np.ndarray, ties: str,
                param: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`best_curve` of every block: :func:`first_minima`."""
    idx, _ = first_minima(values, starts, ties)
    return idx, _last_rows(starts, len(values))


def patience_curve(values: np.ndarray, ties: str, param: int | None) -> tuple[int, int]:
    """Patience ``param`` on one curve, epoch by epoch as a training loop sees it (module
    docstring): the definition the vectorised :func:`patience_blocks` is tested against."""
    _check_ties(ties)
    p = _patience(param)
    best, best_i, since = np.inf, -1, 0
    v = np.asarray(values, dtype=np.float64)
    for i, x in enumerate(v):
        if np.isfinite(x) and (x < best or (ties == "last" and x == best)):
            best, best_i, since = x, i, 0
        else:
            since += 1
        if since >= p:
            return best_i, i
    return best_i, len(v) - 1


def patience_blocks(values: np.ndarray, epochs: np.ndarray, starts: np.ndarray, ties: str,
                    param: int | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`patience_curve` of every block at once: a running minimum per block marks the
    improving rows, a running maximum of their positions gives the best row so far, and the
    stop is the first row whose epoch is ``param`` past it (the block's last row if none)."""
    _check_ties(ties)
    p = _patience(param)
    n = len(values)
    last = _last_rows(starts, n)
    if n == 0:
        return np.empty(0, dtype=np.int64), last
    v = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(v)
    v = np.where(finite, v, np.inf)
    lengths = np.diff(np.append(starts, n))
    block = np.repeat(np.arange(len(starts)), lengths)
    start_of_row = np.repeat(starts, lengths)
    running = pd.Series(v).groupby(block, sort=False).cummin().to_numpy()
    before = np.empty(n)
    before[0] = np.inf
    before[1:] = running[:-1]
    before[starts] = np.inf  # nothing precedes a block's first epoch
    improves = finite & ((v < before) if ties == "first" else (v <= before))
    best_row = np.maximum.accumulate(np.where(improves, np.arange(n), -1))
    best_row = np.where(best_row >= start_of_row, best_row, -1)  # not a previous block's
    e = np.asarray(epochs, dtype=np.int64)
    origin = np.where(best_row >= 0, e[np.maximum(best_row, 0)], e[start_of_row] - 1)
    hit_rows = np.flatnonzero(e - origin >= p)
    stop = last.copy()
    blocks_hit, first = np.unique(block[hit_rows], return_index=True)
    stop[blocks_hit] = hit_rows[first]
    return best_row[stop].astype(np.int64), stop


def _patience(param: int | None) -> int:
    if param is None or isinstance(param, bool) or int(param) != param or param < 1:
        raise ValueError(f"a patience is an integer >= 1, got {param!r}")
    return int(param)


def _last_rows(starts: np.ndarray, n: int) -> np.ndarray:
    return (np.append(np.asarray(starts)[1:], n) - 1).astype(np.int64)


def default_patiences(model: str) -> tuple[int, ...]:
    """The built-in patience rule's defaults for ``model``: :data:`NETWORK_PATIENCES` for a
    registered network, else :data:`ROUND_PATIENCES` (a model the registry does not know, e.g.
    results from someone else's install, counts as a booster)."""
    spec = get_models().get(model)
    return NETWORK_PATIENCES if spec is not None and spec.network else ROUND_PATIENCES


BEST_RULE = StoppingRule(
    BEST, "best", best_curve, best_blocks,
    description="train the whole run, return its best epoch (the paper's rule)")
PATIENCE_RULE = StoppingRule(
    PATIENCE, "patience", patience_curve, patience_blocks, parametrised=True,
    default_params=default_patiences,
    description="stop p epochs after the best so far and return it (early_stopping_rounds, "
                "EarlyStopping)")


# --- the registry --------------------------------------------------------------------------------


@functools.cache
def _registry() -> Mapping[str, StoppingRule]:
    return MappingProxyType(load_registrations(GROUP, StoppingRule, lambda r: r.id))


def get_stopping_rules() -> Mapping[str, StoppingRule]:
    """id -> :class:`StoppingRule` of every registered rule (built-ins first)."""
    return _registry()


def get_stopping_rule(rule_id: str) -> StoppingRule:
    try:
        return _registry()[rule_id]
    except KeyError:
        raise ValueError(f"unknown stopping rule {rule_id!r}; registered: "
                         f"{', '.join(_registry())} (entry-point group {GROUP!r})") from None


def reload_registry() -> None:
    """Forget the loaded registry (the next use reads the entry points again)."""
    _registry.cache_clear()


# --- which rules a selection applies -------------------------------------------------------


def patiences_for(setting: Any, model: str) -> tuple[int, ...]:
    """The patiences of ``model`` under the ``patience`` setting: None = the defaults
    (:func:`default_patiences`); a list = those for every model; a mapping model -> list
    (None or absent = that model's defaults). Sorted, without repeats; an empty list = no
    patience rule."""
    if isinstance(setting, Mapping):
        setting = setting.get(model)
    values = default_patiences(model) if setting is None else tuple(setting)
    return tuple(sorted({_patience(v) for v in values}))


def rule_choices(model: str, patience: Any = None) -> tuple[RuleChoice, ...]:
    """Every (rule, parameter) a selection of ``model`` applies (module docstring), in registry
    order and increasing parameter: ``best`` first."""
    out = []
    for rule in _registry().values():
        if not rule.parametrised:
            out.append(RuleChoice(rule.id))
            continue
        params = (patiences_for(patience, model) if rule.id == PATIENCE
                  else tuple(sorted(set(rule.default_params(model)))))  # type: ignore[misc]
        out += [RuleChoice(rule.id, int(p)) for p in params]
    return tuple(out)


def apply_rule(choice: RuleChoice, values: np.ndarray, epochs: np.ndarray, starts: np.ndarray,
               ties: str) -> tuple[np.ndarray, np.ndarray]:
    """(row of the returned epoch or -1, row of the stop epoch) of every block under ``choice``:
    the rule's ``blocks`` where it has one, else its ``curve`` block by block."""
    rule = get_stopping_rule(choice.rule)
    n = len(values)
    if rule.blocks is not None:
        chosen, stop = rule.blocks(values, epochs, starts, ties, choice.param)
        return np.asarray(chosen, dtype=np.int64), np.asarray(stop, dtype=np.int64)
    ends = np.append(starts[1:], n)
    chosen = np.full(len(starts), -1, dtype=np.int64)
    stop = np.empty(len(starts), dtype=np.int64)
    for b, (s, e) in enumerate(zip(starts, ends, strict=True)):
        pick, at = rule.curve(np.asarray(values[s:e], dtype=np.float64), ties, choice.param)
        if not -1 <= pick <= at < e - s:
            raise ValueError(f"stopping rule {rule.id!r} returned epoch position {pick} and "
                             f"stop position {at} for a curve of {e - s} epochs (needs "
                             "-1 <= returned <= stop < epochs)")
        chosen[b] = s + pick if pick >= 0 else -1
        stop[b] = s + at
    return chosen, stop


# --- selected rows -------------------------------------------------------------------------------

#: the columns a selection gained with the rules (a file selected before them lacks them all)
RULE_COLUMNS: tuple[str, ...] = ("rule", "patience", "stop_epoch", "epochs_trained",
                                 "epochs_recorded", "oracle_logloss_ts")


def with_rule_columns(selected: Any) -> Any:
    """``selected`` (a DataFrame of selected rows) with the rule columns: a selected file
    without rule columns (a published copy's files) is the ``best`` rule's, with what it
    cannot know (the stop epoch, the compute, the test oracle) as NaN."""
    if "rule" in selected.columns:
        return selected
    out = selected.copy()
    out["rule"] = BEST
    out["patience"] = pd.array([pd.NA] * len(out), dtype="Int64")
    for c in RULE_COLUMNS[2:]:
        out[c] = np.nan
    return out


def best_rows(selected: Any) -> Any:
    """The rows of the ``best`` rule: one per (model, dataset, split, regime, stopping), what
    every comparison of the paper reads."""
    if "rule" not in selected.columns:
        return selected
    return selected[selected["rule"] == BEST].reset_index(drop=True)


def choice_names(selected: Any) -> Any:
    """The :attr:`RuleChoice.name` of every row of ``selected`` (a Series)."""
    sel = with_rule_columns(selected)
    param = sel["patience"].astype("Int64")
    text = param.astype(str).where(param.notna(), "")
    return pd.Series(np.where(text == "", sel["rule"].astype(str),
                              sel["rule"].astype(str) + " " + text),
                     index=sel.index, dtype=object)


def selected_choices(selected: Any) -> list[RuleChoice]:
    """The distinct (rule, parameter) of ``selected``, in registry order and increasing
    parameter (unregistered rules last, by id)."""
    sel = with_rule_columns(selected)
    pairs = sel[["rule", "patience"]].drop_duplicates()
    found = {RuleChoice(str(r), None if _isna(p) else int(p))
             for r, p in pairs.itertuples(index=False)}
    order = {r: i for i, r in enumerate(_registry())}
    return sorted(found, key=lambda c: (order.get(c.rule, len(order)), c.rule,
                                        -1 if c.param is None else c.param))


def _isna(x: Any) -> bool:
    return bool(pd.isna(x))


def describe_rules(choices: Sequence[RuleChoice]) -> str:
    """``best, patience 8/16/32`` (a log line, a caption)."""
    names: dict[str, list[str]] = {}
    for c in choices:
        names.setdefault(c.rule, []).append("" if c.param is None else str(c.param))
    return ", ".join(r if p == [""] else f"{r} {'/'.join(x for x in p if x)}"
                     for r, p in names.items())
