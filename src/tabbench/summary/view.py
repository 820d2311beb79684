"""What a summary compares (docs/design.md §7): the baseline every method is put beside, the
methods of the Fig. 5 panel, and the comparisons a user declares on top of the paper's claims.

The paper fixes all three (baseline "Logloss+TS", Fig. 5's four methods, its claims); a
researcher adding a stopping metric wants "My-Gap+TS vs TS-Ref.+TS" judged exactly like the
paper's claims. Config keys (redraw settings: they change no trained result):

- ``figures_baseline``: the method the summary's relative differences, Fig. 5 and G.1–G.4 are
  relative to (null = :data:`tabbench.summary.methods.BASELINE`);
- ``figures_methods``: the methods of Fig. 5, in the order drawn (null =
  :data:`tabbench.summary.methods.FIG5_METHODS`);
- ``comparisons``: a list of ``{method, versus, metric, kind, subset, unit, models, regimes,
  statement, id}`` (only ``method`` and ``versus`` required): each becomes a
  :class:`tabbench.summary.claims.Claim` (``figure: "declared"``), checked by the same
  :func:`tabbench.summary.claims.check_claims` — same pairing of splits, statistics and verdict
  rule —
  and drawn in the Fig. 5-style figure of the declared comparisons;
- ``low_signal_learnability``: the learnability at and above which a large dataset is
  low-signal, the headline then judged again without those datasets
  (:mod:`tabbench.summary.low_signal`; the settings table's default).

Method names are checked against the registered stopping metrics (a plugin's included) when
the view is built, so a typo is one line naming the known methods, not an empty figure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tabbench.models.runs_schema import TEST_METRIC_IDS
from tabbench.settings.table import default
from tabbench.summary.claims import KINDS, Claim
from tabbench.summary.methods import BASELINE, FIG5_METHODS, method_names

#: what a declared comparison's ``figure`` says (the claims table's first column)
DECLARED = "declared"
SUBSET_NAMES = ("large", "all", "large_vs_small")
UNITS = ("dataset", "split")
#: the keys of one declared comparison, and the defaults of the optional ones
COMPARISON_DEFAULTS: dict[str, Any] = {"metric": "logloss", "kind": "better",
                                       "subset": "large", "unit": "dataset", "models": None,
                                       "regimes": None, "statement": None, "id": None}
REQUIRED = ("method", "versus")
#: the learnability at and above which a large dataset is low-signal (the settings table's)
LOW_SIGNAL_LEARNABILITY = float(default("low_signal_learnability"))


class ViewError(ValueError):
    """A figures/comparisons setting that names no known method, metric or kind."""


@dataclass(frozen=True)
class SummaryView:
    """The baseline, the Fig. 5 methods and the declared comparisons of one summary."""

    baseline: str = BASELINE
    fig5_methods: tuple[str, ...] = FIG5_METHODS
    declared: tuple[Claim, ...] = ()
    low_signal: float = LOW_SIGNAL_LEARNABILITY

    def as_meta(self) -> dict[str, Any]:
        """What ``meta.json`` records (and the figures read back)."""
        return {"baseline": self.baseline, "figures_methods": list(self.fig5_methods),
                "comparisons": [_claim_dict(c) for c in self.declared],
                "low_signal_learnability": self.low_signal}


def view_from_config(cfg: Mapping[str, Any]) -> SummaryView:
    """The view of the config keys ``figures_baseline``, ``figures_methods``,
    ``comparisons`` and ``low_signal_learnability`` (module docstring); missing or null keys
    take the paper's choice (the last: the settings table's). Raises :class:`ViewError` naming
    the key and the known values."""
    known = method_names()
    baseline = cfg.get("figures_baseline") or BASELINE
    _known_methods("figures_baseline", [baseline], known)
    methods = tuple(cfg.get("figures_methods") or FIG5_METHODS)
    _known_methods("figures_methods", methods, known)
    declared = tuple(_declared_claim(i, spec, known)
                     for i, spec in enumerate(cfg.get("comparisons") or ()))
    ids = [c.id for c in declared]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise ViewError(f"config key 'comparisons': two comparisons have the id "
                        f"{', '.join(dupes)}; give each its own 'id'")
    return SummaryView(baseline, methods, declared, _low_signal(cfg))


def _low_signal(cfg: Mapping[str, Any]) -> float:
    value = cfg.get("low_signal_learnability")
    if value is None:
        return LOW_SIGNAL_LEARNABILITY
    try:
        threshold = float(value)
    except (TypeError, ValueError):
        threshold = float("nan")
    if isinstance(value, bool) or not threshold > 0:
        raise ViewError(f"config key 'low_signal_learnability': expected a number above 0 (a "
                        f"share of the prior's entropy, e.g. {LOW_SIGNAL_LEARNABILITY:g}), got "
                        f"{value!r}")
    return threshold


def view_from_meta(meta: Mapping[str, Any]) -> SummaryView:
    """The view a summary's ``meta.json`` recorded (:meth:`SummaryView.as_meta`); a summary
    whose meta.json records none is the paper's view."""
    return view_from_config({"figures_baseline": meta.get("baseline"),
                             "figures_methods": meta.get("figures_methods"),
                             "comparisons": meta.get("comparisons"),
                             "low_signal_learnability": meta.get("low_signal_learnability")})


def _known_methods(key: str, names: Sequence[str], known: Sequence[str]) -> None:
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ViewError(f"config key {key!r}: unknown method {', '.join(map(repr, unknown))}; "
                        f"the registered ones are {', '.join(known)}")


def _declared_claim(index: int, spec: Any, known: Sequence[str]) -> Claim:
    where = f"config key 'comparisons' [{index}]"
    if not isinstance(spec, Mapping):
        raise ViewError(f"{where}: expected a mapping with 'method' and 'versus', got "
                        f"{spec!r}")
    missing = [k for k in REQUIRED if not spec.get(k)]
    extra = sorted(set(spec) - set(REQUIRED) - set(COMPARISON_DEFAULTS))
    if missing or extra:
        problem = (f"missing {', '.join(missing)}" if missing
                   else f"unknown key {', '.join(extra)}")
        raise ViewError(f"{where}: {problem}; keys: {', '.join(REQUIRED)} (required), "
                        f"{', '.join(COMPARISON_DEFAULTS)}")
    s = {**COMPARISON_DEFAULTS, **{k: v for k, v in spec.items() if v is not None}}
    _known_methods(f"comparisons [{index}]", [s["method"], s["versus"]], known)
    choices = {"metric": (*TEST_METRIC_IDS, "epoch"), "kind": KINDS, "subset": SUBSET_NAMES,
               "unit": UNITS}
    for key, allowed in choices.items():
        if s[key] not in allowed:
            raise ViewError(f"{where}: {key} {s[key]!r} is not one of {', '.join(allowed)}")
    if s["kind"] == "best_ranked":
        raise ViewError(f"{where}: kind 'best_ranked' ranks every stopping method; declare "
                        "two-method comparisons (better, worse, comparable, no_worse, "
                        "sometimes_better)")
    statement = s["statement"] or f"{s['method']} {_KIND_WORDS[s['kind']]} {s['versus']}"
    cid = s["id"] or _slug(f"{s['method']} vs {s['versus']} {s['metric']}")
    return Claim(str(cid), DECLARED, str(statement), s["method"], s["versus"], s["metric"],
                 s["kind"], subset=s["subset"], unit=s["unit"],
                 models=None if s["models"] is None else tuple(s["models"]),
                 regimes=None if s["regimes"] is None else tuple(s["regimes"]))


_KIND_WORDS = {"better": "is better than", "worse": "is worse than",
               "comparable": "is comparable to", "no_worse": "is no worse than",
               "sometimes_better": "is sometimes better than"}


def _slug(text: str) -> str:
    return "declared_" + re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _claim_dict(claim: Claim) -> dict[str, Any]:
    return {"id": claim.id, "method": claim.method, "versus": claim.versus,
            "metric": claim.metric, "kind": claim.kind, "subset": claim.subset,
            "unit": claim.unit, "statement": claim.statement,
            "models": None if claim.models is None else list(claim.models),
            "regimes": None if claim.regimes is None else list(claim.regimes)}
