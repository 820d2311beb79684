"""No seed flips a verdict of a shipped copy: every claims cell whose verdict the Bayesian
signed-rank test decides is judged again with 20 seeds of its Monte Carlo draws and must get the
same verdict each time (*borderline* included: a cell is either decided by its draws for every
seed, or borderline for every seed). The cells are those the copy's summary judges (the paper's
claims, the declared ones and the claims per stopping rule: claims.md and the pages' ``claims``
and ``stopping_rules`` tables) and the headline at the ROPEs of the pages' ``rope`` table.

Only the posterior is drawn again: the rest of a cell's evidence (its datasets, the frequentist
tests, the ranks) uses no seed, and the verdict of a cell without a posterior none either.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tabbench.report.page_tables import page_inputs, rope_table
from tabbench.report.redraw import collect_selected
from tabbench.settings.folder import ResultsFolder
from tabbench.summary import comparisons as cmp
from tabbench.summary.claims import DECIDES, judge
from tabbench.summary.stopping_rules import best_rows

REPO = Path(__file__).resolve().parents[2]
COPIES = ["bundled", "large", "large_rerun", "bundled_part3"]
SEEDS = range(20)


class _Recorder:
    """Every cell a computation judges on a posterior: its kind, its evidence, the verdict and
    what the posterior was drawn from (the differences, the ROPE, the probability it decides)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.drawn: dict[int, tuple] = {}
        self.cells: dict[tuple, str] = {}
        self.draws: dict[tuple, int] = {}
        self._keep: list = []
        test, rule = cmp.bayesian_signed_rank, judge.verdict

        def bayesian_signed_rank(rel, rope=cmp.ROPE_PERCENT, nsamples=cmp.BAYES_SAMPLES,
                                 seed=cmp.BAYES_SEED, decides=None,
                                 max_samples=cmp.BAYES_MAX_SAMPLES):
            post = test(rel, rope, nsamples, seed, decides, max_samples)
            self._keep.append(post)  # its id stays its own
            self.drawn[id(post)] = (tuple(map(float, rel)), float(rope), decides)
            return post

        def verdict(kind, evidence):
            got = rule(kind, evidence)
            if kind in DECIDES and id(evidence.posterior) in self.drawn:
                rel, rope, decides = self.drawn[id(evidence.posterior)]
                assert decides == DECIDES[kind]
                key = (kind, evidence.n, evidence.n_datasets, rel, rope)
                assert self.cells.setdefault(key, got) == got
                self.draws[key] = evidence.posterior.draws
            return got

        monkeypatch.setattr(cmp, "bayesian_signed_rank", bayesian_signed_rank)
        monkeypatch.setattr(judge, "verdict", verdict)


def _flipped(cells: dict[tuple, str]) -> list[str]:
    """The cells some seed judges otherwise than the shipped seed, described."""
    flipped = []
    for (kind, n, n_datasets, rel, rope), want in cells.items():
        for seed in SEEDS:
            post = cmp.bayesian_signed_rank(list(rel), rope, seed=seed, decides=DECIDES[kind])
            evidence = judge.Evidence(n, n_datasets=n_datasets, posterior=post)
            got = judge.verdict(kind, evidence)
            if got != want:
                p = getattr(post, DECIDES[kind])
                flipped.append(f"{kind} n={n} ROPE {rope}: seed {seed} {got!r} (P {p:.5f} ± "
                               f"{post.standard_error(p):.5f}, {post.draws:,} draws), shipped "
                               f"{want!r}")
                break
    return flipped


def _judge_copy(copy: str, monkeypatch: pytest.MonkeyPatch) -> dict[tuple, str]:
    recorder = _Recorder(monkeypatch)
    inputs = page_inputs(REPO / "docs" / "results" / copy, jobs=1)
    rope_table(inputs.selected, inputs.large_rows, inputs.frames["meta"]["rope_percent"])
    monkeypatch.undo()
    return recorder.cells


@pytest.mark.slow
@pytest.mark.parametrize("copy", COPIES)
def test_no_seed_flips_a_verdict_of_a_shipped_copy(copy, monkeypatch):
    cells = _judge_copy(copy, monkeypatch)
    assert len(cells) > 20, "the copy's claims were not judged on posteriors"
    assert not _flipped(cells), _flipped(cells)


def test_no_seed_flips_the_large_headline_at_any_rope(monkeypatch):
    """The fast variant: the paper's headline (TS-Ref.+TS vs Logloss+TS) of suite large's copy,
    per model and regime, at each ROPE of docs/reproduction_large.md's ``rope`` table: whichever
    of its probabilities lie near a threshold (the copy decides which), 20 seeds give every
    cell the same verdict; where one does, the test draws more there, as the claims do."""
    results = REPO / "docs" / "results" / "large"
    settings = ResultsFolder.open(results).redraw_settings
    selected = best_rows(collect_selected(results, jobs=1)[0])
    assert settings.large_rows is not None  # the copy's own threshold, as its page's
    rope = cmp.ROPE_PERCENT if settings.rope_percent is None else settings.rope_percent
    recorder = _Recorder(monkeypatch)
    rope_table(selected, settings.large_rows, rope)
    monkeypatch.undo()
    assert len(recorder.cells) >= 20
    assert not _flipped(recorder.cells), _flipped(recorder.cells)
