"""The figures' shared look (tabbench.plots.style)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest

from tabbench.plots.style import symlog_percent_axis


def test_the_percent_axis_ends_on_a_labelled_step_and_at_100_beyond_it():
    """The symlog axis's limits are the first 1-2-5 step beyond the data (8 % headroom), ±100
    for values beyond ±100 (a clipped loss), with labels once per decade."""
    fig, ax = plt.subplots()
    symlog_percent_axis(ax, [-150.0, 3.0, float("nan")])
    assert ax.get_ylim() == pytest.approx((-100 * 1.08, 5 * 1.08))
    assert list(ax.yaxis.get_majorticklocs()) == [-100.0, -10.0, -1.0, 0.0, 1.0]
    symlog_percent_axis(ax, [0.2])
    assert ax.get_ylim() == pytest.approx((-1.08, 1.08))
    plt.close(fig)
