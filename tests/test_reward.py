"""rm.reward (SPEC §5): exact anchors, hand values, vectorisation, errors, gate, properties, CLI."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import reteco_measures as rm
from reteco_measures.cli.main import main

B = 0.4530094614433184


def spec_formula(q: float, a: float = 15.0, b: float = B) -> float:
    """SPEC §5 written out literally (scalar, no vectorisation)."""
    if q <= b:
        return (a / 100) * q / b
    return a / 100 + (1 - a / 100) * (q - b) / (1 - b)


def test_exact_anchors_default():
    assert rm.reward(0.0) == 0.0
    assert rm.reward(B) == 0.15
    assert rm.reward(1.0) == 1.0
    assert rm.reward(0) == 0.0 and rm.reward(1) == 1.0  # ints too


def test_hand_values_simple_parameters():
    # a = 20, b = 0.5: slope 0.2/0.5 = 0.4 below b; 0.2 + 0.8 * (q - 0.5) / 0.5 above
    assert rm.reward(0.25, a=20, b=0.5) == pytest.approx(0.1, abs=1e-15)
    assert rm.reward(0.5, a=20, b=0.5) == 0.2
    assert rm.reward(0.75, a=20, b=0.5) == pytest.approx(0.6, abs=1e-15)  # 0.2 + 0.8 * 0.5
    # a = 50, b = 0.5 is the identity
    for q in (0.0, 0.1, 0.3, 0.5, 0.6, 0.99, 1.0):
        assert rm.reward(q, a=50, b=0.5) == pytest.approx(q, abs=1e-15)


def test_default_values_match_the_written_formula():
    for q in (0.0, 0.1, 0.2, 0.4, B, 0.46, 0.6, 0.8, 0.95, 1.0):
        assert rm.reward(q) == pytest.approx(spec_formula(q), rel=1e-14, abs=1e-15)
    # one by hand: q = 0.8 -> 0.15 + 0.85 * (0.8 - b) / (1 - b)
    assert rm.reward(0.8) == pytest.approx(0.15 + 0.85 * 0.3469905385566816 / 0.5469905385566816, rel=1e-13)


def test_vectorised_numpy_list_and_shapes():
    q = np.array([0.0, B, 1.0, 0.2])
    out = rm.reward(q)
    assert isinstance(out, np.ndarray) and out.shape == (4,)
    assert out[0] == 0.0 and out[1] == 0.15 and out[2] == 1.0
    assert out[3] == pytest.approx(spec_formula(0.2))
    grid = rm.reward(np.full((2, 3), B))
    assert grid.shape == (2, 3) and np.all(grid == 0.15)
    assert isinstance(rm.reward([0.0, 1.0]), np.ndarray)
    assert isinstance(rm.reward(np.float64(0.5)), float)


def test_pandas_series_and_frame_keep_index():
    s = pd.Series([0.0, B, 1.0], index=["x", "y", "z"], name="q")
    out = rm.reward(s)
    assert isinstance(out, pd.Series)
    assert list(out.index) == ["x", "y", "z"] and out.name == "q"
    assert out.tolist() == [0.0, 0.15, 1.0]
    df = pd.DataFrame({"a": [0.0, 1.0], "b": [B, 0.0]}, index=[5, 6])
    out_df = rm.reward(df)
    assert isinstance(out_df, pd.DataFrame) and list(out_df.columns) == ["a", "b"]
    assert out_df.loc[6, "a"] == 1.0 and out_df.loc[5, "b"] == 0.15


@pytest.mark.parametrize("bad", [-1e-12, 1.0000001, -1.0, 2.0, math.nan, math.inf, -math.inf])
def test_out_of_range_or_non_finite_is_an_error(bad):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        rm.reward(bad)
    with pytest.raises(ValueError):
        rm.reward(np.array([0.5, bad]))
    with pytest.raises(ValueError):
        rm.reward(pd.Series([0.1, bad]))


@pytest.mark.parametrize("bad", ["0.5", None, [0.5, "x"], [None], b"0.5", 0.5 + 0j])
def test_non_numbers_are_an_error(bad):
    with pytest.raises(ValueError):
        rm.reward(bad)


@pytest.mark.parametrize("a,b", [(15, 0.0), (15, 1.0), (15, -0.1), (-1, 0.5), (101, 0.5), (math.nan, 0.5),
                                 (15, math.nan)])
def test_bad_parameters(a, b):
    with pytest.raises(ValueError):
        rm.reward(0.5, a=a, b=b)


def test_gate_forces_zero_before_the_range_check():
    assert rm.reward(0.9, gate=False) == 0.0
    assert rm.reward(0.9, gate=True) == pytest.approx(spec_formula(0.9))
    # a failed batch has no meaningful quality: NaN or out-of-range is fine when gated out
    assert rm.reward(math.nan, gate=False) == 0.0
    out = rm.reward(np.array([0.9, math.nan, 1.0]), gate=np.array([True, False, False]))
    assert out[0] == pytest.approx(spec_formula(0.9)) and out[1] == 0.0 and out[2] == 0.0
    # ...but not when the gate is open
    with pytest.raises(ValueError):
        rm.reward(np.array([0.9, math.nan]), gate=np.array([True, True]))
    # a scalar quality with a gate vector broadcasts
    assert rm.reward(1.0, gate=[True, False]).tolist() == [1.0, 0.0]
    with pytest.raises(ValueError):
        rm.reward([0.1, 0.2, 0.3], gate=[True, False])
    with pytest.raises(ValueError):
        rm.reward(0.5, gate="yes")


quality = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
anchor = st.floats(min_value=0.0, max_value=100.0, allow_nan=False)
reference = st.floats(min_value=1e-6, max_value=1 - 1e-6, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(anchor, reference)
def test_property_exact_anchors_for_any_parameters(a, b):
    assert rm.reward(0.0, a=a, b=b) == 0.0
    assert rm.reward(b, a=a, b=b) == a / 100
    assert rm.reward(1.0, a=a, b=b) == 1.0


@settings(max_examples=400, deadline=None)
@given(quality, quality, anchor, reference)
def test_property_monotone(q1, q2, a, b):
    lo, hi = min(q1, q2), max(q1, q2)
    assert rm.reward(lo, a=a, b=b) <= rm.reward(hi, a=a, b=b)


@settings(max_examples=300, deadline=None)
@given(anchor, reference)
def test_property_monotone_and_continuous_across_b(a, b):
    below = np.nextafter(b, 0.0)
    above = np.nextafter(b, 1.0)
    r_below, r_b, r_above = rm.reward(np.array([below, b, above]), a=a, b=b)
    assert r_below <= r_b <= r_above
    assert abs(r_above - r_below) < 1e-9


@settings(max_examples=400, deadline=None)
@given(quality, st.floats(min_value=0.0, max_value=1e-3), anchor, st.floats(min_value=0.01, max_value=0.99))
def test_property_lipschitz_continuous(q, eps, a, b):
    q2 = min(1.0, q + eps)
    slope = max(a / 100 / b, (1 - a / 100) / (1 - b))
    assert abs(rm.reward(q2, a=a, b=b) - rm.reward(q, a=a, b=b)) <= slope * (q2 - q) + 1e-12


@settings(max_examples=200, deadline=None)
@given(st.lists(quality, min_size=0, max_size=30))
def test_property_vectorised_equals_scalar(values):
    arr = rm.reward(np.array(values, dtype=float))
    assert arr.shape == (len(values),)
    for q, r in zip(values, arr.tolist(), strict=True):
        assert r == rm.reward(q)
        assert r == pytest.approx(spec_formula(q), rel=1e-12, abs=1e-15)


# ---- command line --------------------------------------------------------------------------------


def test_cli_single_value(capsys):
    assert main(["reward", "0.4530094614433184"]) == 0
    assert capsys.readouterr().out.strip() == "0.150000"


def test_cli_several_values_and_parameters(capsys):
    assert main(["reward", "0.25", "0.75", "--a", "20", "--b", "0.5"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == ["0.25\t0.100000", "0.75\t0.600000"]


def test_cli_out_of_range_is_a_clear_error(capsys):
    assert main(["reward", "1.5"]) == 2
    err = capsys.readouterr().err
    assert "raw quality must be a finite number in [0, 1]" in err and "Traceback" not in err
    assert main(["reward", "nan"]) == 2
    assert main(["reward", "0.5", "--b", "1.0"]) == 2
