"""Known values of RealMLP's schedules (docs/design.md §10)."""

import math

import pytest

from tabbench.models.realmlp.schedules import constant, coslog, flat_cos, get_schedule


@pytest.mark.parametrize("t", [0.0, 1 / 15, 3 / 15, 7 / 15, 1.0])
def test_coslog4_is_zero_at_restarts(t):
    # log2(1 + 15t) is an integer 0..4 there, so the cosine is at its maximum.
    assert get_schedule("coslog4")(t) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_coslog4_peaks_between_restarts(k):
    # log2(1 + 15t) = k + 1/2  <=>  t = (2**(k + 1/2) - 1) / 15 -> value 1.
    t = (2 ** (k + 0.5) - 1) / 15
    assert get_schedule("coslog4")(t) == pytest.approx(1.0)


def test_coslog4_generic_point():
    t = 0.3
    expected = 0.5 * (1 - math.cos(2 * math.pi * math.log2(1 + 15 * t)))
    assert coslog(4)(t) == pytest.approx(expected)
    assert 0.0 < expected < 1.0


@pytest.mark.parametrize(
    ("t", "expected"),
    [(0.0, 1.0), (0.25, 1.0), (0.4999, 1.0), (0.5, 1.0), (0.75, 0.5), (1.0, 0.0)],
)
def test_flat_cos(t, expected):
    assert flat_cos(t) == pytest.approx(expected, abs=1e-12)


def test_flat_cos_second_half_formula():
    t = 0.6
    assert flat_cos(t) == pytest.approx(0.5 * (1 + math.cos(math.pi * (2 * t - 1))))


def test_constant_and_lookup():
    assert constant(0.7) == 1.0
    assert get_schedule("constant") is constant
    assert get_schedule("flat_cos") is flat_cos
    assert get_schedule("cos")(0.5) == pytest.approx(0.5)


@pytest.mark.parametrize("name", ["coslog", "coslogx", "linear", "coslog0"])
def test_unknown_schedule_raises(name):
    with pytest.raises(ValueError):
        get_schedule(name)
