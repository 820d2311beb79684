"""The numbers the docs repeat are derived, not typed: job counts, dataset counts and preset
sizes in README.md, docs/*.md, config.yaml and the profiles are checked against what the code
and the data give.

:func:`facts` computes them once: the Ye et al. manifest (its size, the datasets the paper's
filter keeps by the manifest's notes and classes, those without an OpenML id), the bundled
datasets and how many of them the real filter keeps, and the presets. Each mention is found by
a pattern of :data:`MENTIONS` (every pattern must still match somewhere, so a rewording that
escapes a check fails here too), and a catch-all finds full-study job counts and hundreds of
datasets that no pattern names. The 196 the paper reports is the paper's, not derivable: it may
appear only where the paper is named. The cost figures of the presets table and the GPU
runbook must be docs/performance.md's (its one source, `benchmarks/study_cost.py`'s output),
rounded where they say "≈".
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import yaml
from fixtures.scripts import load_script

from tabbench.data.filtering import FilterParams, filter_dataset
from tabbench.data.manifest import demo_manifest, ye2024_manifest
from tabbench.data.sources import bundled
from tabbench.data.sources.options import SourceOptions
from tabbench.models.registry import paper_epochs
from tabbench.settings.presets import PRESETS

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "data" / "demo"
FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "config.yaml",
         *sorted((REPO / "profiles").glob("*/config.yaml"))]
#: what the paper reports kept (Berta et al. 2025, App. G.6): a fact of the paper, not of ours
PAPER_REPORTED_KEPT = 196
NUMBER = r"(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"


def _study_cost():
    return load_script("benchmarks/study_cost.py")


@lru_cache(maxsize=1)
def facts() -> dict[str, int]:
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    ye = ye2024_manifest()
    paper, bundled_preset = PRESETS["paper"], PRESETS["bundled"]
    kept = len(_study_cost().paper_datasets())  # what the cost model predicts, too
    params = FilterParams(max_rows=bundled_preset["max_rows"], min_rows=config["min_rows"],
                          max_classes=config["max_classes"],
                          all_nan_columns=config["all_nan_columns"])
    options = SourceOptions(demo_dir=DEMO)
    names = list(demo_manifest(DEMO)["name"])
    bundled_kept = sum(filter_dataset(bundled.load(n, options), params, n).kept for n in names)
    per_model = bundled_kept * bundled_preset["n_splits"]
    return {
        "suite": len(ye),
        "manifest_kept": kept,
        "no_openml_id": int(ye["openml_id"].isna().sum()),
        "paper_models": len(paper["models"]),
        "paper_splits": paper["n_splits"],
        "paper_jobs": len(paper["models"]) * kept * paper["n_splits"],
        "configs_per_job": 1 + paper["n_configs"],
        "bundled": len(names),
        "bundled_kept": bundled_kept,
        "bundled_splits": bundled_preset["n_splits"],
        "bundled_jobs_per_model": per_model,
        "bundled_jobs": per_model * len(bundled_preset["models"]),
        "bundled_network_jobs": per_model * 2,
        "paper_reported": PAPER_REPORTED_KEPT,
    }


#: the archived page of the first bundled run (docs/reproduction.md is the current one)
ARCHIVED = "reproduction_2026-11-30.md"

#: (file name, pattern, the facts its groups must equal, in order)
MENTIONS: list[tuple[str, str, tuple[str, ...]]] = [
    ("README.md", r"on the (\d+) classification\s+datasets of the Ye et al", ("suite",)),
    ("README.md", r"or on the (\d+) bundled ones", ("bundled",)),
    ("README.md", r"The (\d+) bundled datasets in `data/demo/` \((\d+) pass the paper's filter",
     ("bundled", "bundled_kept")),
    ("index.md", r"on the (\d+) classification datasets of the Ye et al", ("suite",)),
    ("full-study.md", r"The suite has (\d+) datasets", ("suite",)),
    ("full-study.md", r"tabbench data: (\d+) datasets: K kept", ("suite",)),
    ("full-study.md", r"predict (\d+) \(\[design\]\(design\.md#3-datasets\) §3\): (\d+) models × "
                      r"(\d+) datasets × (\d+) splits = ([\d,]+)\s+train jobs of (\d+) configs",
     ("manifest_kept", "paper_models", "manifest_kept", "paper_splits", "paper_jobs",
      "configs_per_job")),
    ("full-study.md", r"Expect about (\d+) kept", ("manifest_kept",)),
    ("full-study.md", r"OpenML has no id for (\d+) of the suite's datasets", ("no_openml_id",)),
    ("full-study.md", r"(\d+) datasets have no OpenML id", ("no_openml_id",)),
    ("full-study.md", r"preset bundled, (\d+) datasets × (\d+) splits",
     ("bundled_kept", "bundled_splits")),
    ("getting-started.md", r"keeps (\d+) of the (\d+) bundled datasets",
     ("bundled_kept", "bundled")),
    ("getting-started.md", r"the (\d+) datasets in `data/demo/`", ("bundled",)),
    ("config.yaml", r"the (\d+) Ye et al\. classification datasets", ("suite",)),
    ("design.md", r"the (\d+) classification datasets of Ye et al", ("suite",)),
    ("design.md", r"\((\d+) datasets have no id", ("no_openml_id",)),
    ("design.md", r"The paper reports (\d+) datasets kept [^;]*; the manifest predicts (\d+)",
     ("paper_reported", "manifest_kept")),
    ("scaling.md", r"about ([\d,]+) training jobs \((\d+) models × the (\d+) datasets the "
                   r"manifest predicts\s+kept, of the paper's (\d+), × (\d+) splits\), each "
                   r"looping over (\d+)",
     ("paper_jobs", "paper_models", "manifest_kept", "paper_reported", "paper_splits",
      "configs_per_job")),
    ("performance.md", r"paper preset \((\d+) datasets\) \| bundled preset \(the (\d+) of "
                       r"data/demo/, (\d+) kept", ("manifest_kept", "bundled", "bundled_kept")),
    ("performance.md", r"The (\d+) datasets \(the paper says (\d+)\)",
     ("manifest_kept", "paper_reported")),
    ("performance.md", r"bundled study's (\d+) jobs \(docs/reproduction_2026-11-30\.md: "
                       r"(\d+) datasets, (\d+) splits",
     ("bundled_jobs", "bundled_kept", "bundled_splits")),
    ("performance.md", r"over their\s+(\d+) jobs", ("bundled_network_jobs",)),
    (ARCHIVED, r"the (\d+) bundled datasets that pass the filter", ("bundled_kept",)),
    (ARCHIVED, r"(\d+) runs files \((\d+) datasets × (\d+) models × (\d+) splits\)",
     ("bundled_jobs", "bundled_kept", "paper_models", "bundled_splits")),
    (ARCHIVED, r"study's (\d+) jobs recorded", ("bundled_jobs",)),
    (ARCHIVED, r"We ran the (\d+) bundled datasets", ("bundled_kept",)),
    ("diagnostics.md", r"\((\d+) runs files: default \+ 10 configs, (\d+) datasets × (\d+) "
                       r"splits\)", ("bundled_jobs_per_model", "bundled_kept", "bundled_splits")),
]


def _value(text: str) -> float:
    return float(text.replace(",", ""))


def _text(name: str) -> str:
    return next(f for f in FILES if f.name == name).read_text()


def _paragraphs(text: str) -> list[str]:
    return re.split(r"\n\s*\n", text)


def test_every_mention_is_what_the_code_and_data_give():
    f = facts()
    wrong = []
    for name, pattern, keys in MENTIONS:
        found = list(re.finditer(pattern, _text(name)))
        assert found, f"{name}: no text matches {pattern!r} any more: update MENTIONS"
        for m in found:
            for key, got in zip(keys, m.groups(), strict=True):
                if _value(got) != f[key]:
                    wrong.append(f"{name}: {m.group(0)!r}: {got} should be {f[key]} ({key})")
    assert not wrong, "\n".join(wrong)


def _approximately(shown: float, exact: float) -> bool:
    """``shown`` is ``exact`` rounded to ``shown``'s own precision (1,900 for 1,892; 4 for 4.1)."""
    if shown != int(shown):
        digits = len(repr(shown).split(".")[1])
        return round(exact, digits) == shown
    zeros = len(str(int(shown))) - len(str(int(shown)).rstrip("0"))
    return round(exact, -zeros) == shown


def test_no_full_study_job_count_and_no_dataset_count_that_the_facts_do_not_give():
    """The catch-all: a number of jobs, files or commands in the thousands, or any number
    within 1 % of the job count, is the full study's (exactly, or rounded after "~"/"about"/"≈"),
    a number of datasets in the hundreds is the suite's,
    the manifest's prediction or, where the paper is named, the paper's."""
    f = facts()
    wrong = []
    jobs = re.compile(r"(~|about |≈ ?)?" + NUMBER + r"\s+(?:train(?:ing)? )?"
                      r"(?:jobs|files|commands|train commands)\b")
    datasets = re.compile(r"\b(\d{3})\s+(?:(?:kept|classification|Ye et al\.)\s+)*datasets\b")
    for path in FILES:
        for para in _paragraphs(path.read_text()):
            for m in jobs.finditer(para):
                n = _value(m.group(2))
                if n >= 1000 and not (n == f["paper_jobs"] or (
                        m.group(1) and _approximately(n, f["paper_jobs"]))):
                    wrong.append(f"{path.name}: {m.group(0)!r} (the full study: "
                                 f"{f['paper_jobs']:,} train jobs)")
            for m in datasets.finditer(para):
                n = int(m.group(1))
                if n in (f["suite"], f["manifest_kept"]):
                    continue
                if n == f["paper_reported"] and "paper" in para:
                    continue
                wrong.append(f"{path.name}: {m.group(0)!r}")
            for m in re.finditer(r"(~|about |≈ ?)?\b(\d,\d{3})\b", para):
                n = _value(m.group(2))  # within 1 % of the job count, however it is worded
                if abs(n - f["paper_jobs"]) <= 0.01 * f["paper_jobs"] and not (
                        n == f["paper_jobs"] or m.group(1)):
                    wrong.append(f"{path.name}: {m.group(0)!r} near the full study's "
                                 f"{f['paper_jobs']:,} train jobs")
            for m in re.finditer(rf"\b{PAPER_REPORTED_KEPT}\b", para):
                if "paper" not in para:
                    wrong.append(f"{path.name}: {PAPER_REPORTED_KEPT} without the paper named: "
                                 f"{para[max(0, m.start() - 80):m.end() + 40]!r}")
    assert not wrong, "\n".join(wrong)


def _presets_table() -> dict[str, list[str]]:
    rows = {}
    for line in _text("getting-started.md").splitlines():
        m = re.match(r"\| `(\w+)`( \(default\))? \|", line)
        if m and m.group(1) in PRESETS:
            rows[m.group(1)] = [c.strip() for c in line.strip().strip("|").split("|")]
    return rows


def test_the_presets_table_is_the_presets():
    rows = _presets_table()
    assert set(rows) == set(PRESETS)
    for name, (_, datasets, splits, configs, epochs, cap, _) in rows.items():
        p = PRESETS[name]
        e = {**paper_epochs(), **p["epochs"]}
        assert splits == str(p["n_splits"]), name
        assert configs == f"default + {p['n_configs']}", name
        assert cap == f"≤ {p['max_rows']:,}", name
        expected = f"{e['xgboost_default']}/{e['xgboost_tuned']}, {e['mlp']}, {e['realmlp']}"
        if "lightgbm" in p["models"]:
            expected += f" (LightGBM {e['lightgbm_default']}/{e['lightgbm_tuned']})"
        assert epochs == expected, name
        if isinstance(p["suite"], list):
            assert datasets == ", ".join(f"`{n}`" for n in p["suite"]), name


def test_config_comments_give_the_presets_values():
    text = _text("config.yaml")
    caps = re.search(r"the preset's cap \(paper/bundled (\d+), demo (\d+), smoke (\d+)\)", text)
    assert caps, "config.yaml: the max_rows comment"
    assert [int(g) for g in caps.groups()] == [PRESETS[p]["max_rows"]
                                               for p in ("paper", "demo", "smoke")]
    assert PRESETS["bundled"]["max_rows"] == PRESETS["paper"]["max_rows"]
    e = paper_epochs()
    epochs = re.search(r"Paper: xgboost_default (\d+), xgboost_tuned (\d+), mlp (\d+), "
                       r"realmlp (\d+)", text)
    assert epochs and [int(g) for g in epochs.groups()] == [
        e["xgboost_default"], e["xgboost_tuned"], e["mlp"], e["realmlp"]]
    configs = re.search(r"besides the default config 0\n# \(paper: (\d+)\)", text)
    assert configs and int(configs.group(1)) == PRESETS["paper"]["n_configs"]


def test_the_memory_arithmetic_is_the_profiles():
    profile = yaml.safe_load((REPO / "profiles" / "default" / "config.yaml").read_text())
    request = profile["set-resources"]["train"]["mem_mb"]
    mb = int(re.fullmatch(r"(\d+) \* attempt", request).group(1))
    text = _text("full-study.md")
    assert f"`mem_mb: {request}`" in text
    m = re.search(r"`--cores (\d+)` with one thread a job may plan (\d+) × (\d+) GB = (\d+) GB",
                  text)
    assert m, "full-study.md: the memory per job"
    cores, jobs, gb, total = (int(g) for g in m.groups())
    assert jobs == cores and gb == mb // 1000 and total == jobs * gb


def _costs(text: str) -> list[tuple[bool, float, str]]:
    unit = r"(GPU-hours|core-hours|h|ms)\b"
    return [(bool(m.group(1)), _value(m.group(2)), m.group(3))
            for m in re.finditer(r"(≈ |~)?" + NUMBER + r" (?:CPU )?" + unit, text)]


def test_the_cost_figures_are_docs_performance():
    """The presets table's compute column and the GPU runbook quote study_cost.py's estimates
    and the H200 measurements; docs/performance.md is where they are made and dated."""
    guide = _text("full-study.md")
    performance = _costs(_text("performance.md"))
    quoted = [row[-1] for row in _presets_table().values()]
    runbook = guide[guide.index("### A GPU box"):guide.index("<!-- full-study-walkthrough -->",
                                                             guide.index("### A GPU box"))]
    wrong = []
    for text in (*quoted, runbook):
        for approx, value, unit in _costs(text):
            same_unit = [v for _, v, u in performance if u == unit]
            if not any(v == value or (approx and _approximately(value, v)) for v in same_unit):
                wrong.append(f"{value:g} {unit}{' (≈)' if approx else ''}")
    assert not wrong, f"figures not in docs/performance.md: {wrong}"


def test_the_dropped_bundled_dataset_is_what_the_filter_says():
    """Getting started says why the demo drops hypothyroid, with the filter's own counts."""
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    demo = PRESETS["demo"]
    params = FilterParams(max_rows=demo["max_rows"], min_rows=config["min_rows"],
                          max_classes=config["max_classes"],
                          all_nan_columns=config["all_nan_columns"])
    out = filter_dataset(bundled.load("hypothyroid", SourceOptions(demo_dir=DEMO)), params,
                         "hypothyroid")
    assert not out.kept
    step = next(s for s in out.report["steps"] if s["step"] == "drop_missing_numerical")
    m = re.search(r"`hypothyroid` is dropped by the paper's\s+filter \(only (\d+) of its ([\d,]+) "
                  r"rows have no missing numerical value", _text("getting-started.md"))
    assert m, "getting-started.md: why hypothyroid is dropped"
    assert (int(m.group(1)), int(m.group(2).replace(",", ""))) == (
        step["rows_after"], out.report["rows_raw"])
