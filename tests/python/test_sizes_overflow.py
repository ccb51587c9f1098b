"""Checked size, stride and index arithmetic: shapes, extents, arange counts and
slice lengths that int64 cannot hold are clear errors, never wrapped numbers.
Oracles: Python's own range() and slicing, and hand-computed values."""
import pytest

import tessera
from oracle import SETTINGS

pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
int64s = st.integers(INT64_MIN, INT64_MAX)


def range_len(start, stop, step):
    """len(range(start, stop, step)), also where len() itself overflows."""
    try:
        return len(range(start, stop, step))
    except OverflowError:  # beyond sys.maxsize: the same count, computed by hand
        return max(0, (stop - start + step - (1 if step > 0 else -1)) // step)


# ---- the issue's examples ----

def test_empty_whose_byte_size_overflows():
    # 2**61 + 1 float64 elements: once an 8-byte buffer that fill_ wrote past.
    with pytest.raises(ValueError, match=r"empty.*\[2305843009213693953\].*float64.*18446744073709551624 bytes"):
        tessera.empty(2**61 + 1, dtype=tessera.float64)
    with pytest.raises(ValueError, match=r"bytes"):
        tessera.empty(2**61 + 1, dtype=tessera.float64).fill_(1.0)
    with pytest.raises(ValueError, match=r"bytes"):
        tessera.empty(2**61 + 1, dtype=tessera.float64, device="meta")


def test_as_strided_extent_is_checked_exactly():
    with pytest.raises(ValueError, match=r"as_strided.*int64"):
        tessera.zeros(4).as_strided((3,), (2**62 + 100000,))
    t = tessera.arange(4)
    assert t.as_strided((2,), (3,)).tolist() == [0, 3]
    with pytest.raises(ValueError, match=r"as_strided"):
        t.as_strided((2,), (4,))


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_numel_of_a_huge_shape_is_refused_not_zero(device):
    with pytest.raises(ValueError, match=r"\[1099511627776, 1099511627776\].*int64"):
        tessera.zeros((2**40, 2**40), device=device).numel()


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_expand_beyond_int64_is_refused(device):
    with pytest.raises(ValueError, match=r"expand.*\[4294967296, 4294967296\]"):
        tessera.ones(1, 1, device=device).expand(2**32, 2**32).sum()
    # What fits is exact: 2**62 one-byte elements.
    assert tessera.ones(1, 1, dtype=tessera.int8, device=device).expand(2**31, 2**31).numel() == 2**62


def test_arange_of_the_issue_matches_range():
    r = range(2**63 - 1, -2**63 + 1, -2**62)
    assert tessera.arange(2**63 - 1, -2**63 + 1, -2**62).tolist() == list(r)
    assert len(r) == 4


def test_slice_of_the_issue_matches_python():
    assert tessera.arange(5)[0:5:2**63 - 1].tolist() == list(range(5)[0:5:2**63 - 1]) == [0]
    assert tessera.arange(5)[-2**100:2**100:2**100].tolist() == [0]


def test_one_hot_needs_at_least_one_class():
    t = tessera.tensor([0, 1])
    with pytest.raises(ValueError, match=r"one_hot.*num_classes.*0"):
        tessera.one_hot(t, 0)
    with pytest.raises(ValueError, match=r"one_hot.*num_classes"):
        tessera.one_hot(t, -2)
    assert tessera.one_hot(t, 3).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert tessera.one_hot(t).tolist() == [[1, 0], [0, 1]]


def test_integer_index_beyond_int64_is_an_index_error():
    t = tessera.arange(5)
    for i in (2**63, -2**63 - 1, 2**100, -2**100):
        with pytest.raises(IndexError, match=r"out of range.*dimension 0.*size 5"):
            t[i]
    with pytest.raises(IndexError):
        t[2**63] = 1
    assert t[-5].item() == 0


# ---- arange against range() on every int64 triple ----

@SETTINGS
@given(int64s, int64s, int64s.filter(lambda k: k != 0))
def test_arange_count_matches_range(start, end, step):
    n = range_len(start, end, step)
    if (step > 0 and end < start) or (step < 0 and end > start):
        # PyTorch refuses bounds inconsistent with the step; range() is empty then.
        assert n == 0
        with pytest.raises(ValueError, match=r"arange.*inconsistent"):
            tessera.arange(start, end, step, device="meta")
        return
    if n > INT64_MAX:
        with pytest.raises(ValueError, match=r"arange.*elements"):
            tessera.arange(start, end, step, dtype=tessera.int8, device="meta")
        return
    # int8 on meta: one byte per element, so every int64 count is representable.
    assert tessera.arange(start, end, step, dtype=tessera.int8, device="meta").shape == (n,)
    if 8 * n > INT64_MAX:
        with pytest.raises(ValueError, match=r"arange.*bytes"):
            tessera.arange(start, end, step, device="meta")


@SETTINGS
@given(int64s, int64s.filter(lambda k: k != 0), st.integers(0, 40), st.data())
def test_arange_values_match_range(start, step, count, data):
    # An end that makes `count` elements (past the last by 1 to |step|), clipped to int64.
    sign = 1 if step > 0 else -1
    end = start if count == 0 else start + step * (count - 1) + sign * data.draw(st.integers(1, abs(step)))
    end = min(max(end, INT64_MIN), INT64_MAX)
    expected = list(range(start, end, step))
    assert tessera.arange(start, end, step).tolist() == expected
    assert tessera.arange(start, end, step, device="meta").shape == (len(expected),)


def test_arange_float_counts_beyond_int64_are_refused():
    with pytest.raises(ValueError, match=r"arange.*elements"):
        tessera.arange(0.0, 1e300, device="meta")
    with pytest.raises(ValueError, match=r"arange.*elements"):
        tessera.arange(-1e308, 1e308, 1e-300, device="meta")
    assert tessera.arange(0.0, 2.0**40, dtype=tessera.int8, device="meta").shape == (2**40,)


# ---- slicing against Python's slicing, with any Python ints ----

bounds = st.one_of(st.none(), st.integers(-30, 30), st.integers(), st.integers(-2**200, 2**200),
                   st.sampled_from([INT64_MIN, INT64_MAX, INT64_MIN - 1, INT64_MAX + 1, 2**63 - 2]))
steps = st.one_of(st.none(), st.integers(1, 10), st.integers(1, 2**200),
                  st.sampled_from([INT64_MAX, INT64_MAX + 1, 2**63 - 2]))


@SETTINGS
@given(st.integers(0, 20), bounds, bounds, steps)
def test_slice_matches_python_slicing(n, start, stop, step):
    s = slice(start, stop, step)
    assert tessera.arange(n)[s].tolist() == list(range(n)[s])
    # A second dim keeps the same semantics (and the view's strides).
    t = tessera.arange(2 * n).view(2, n)
    assert t[:, s].tolist() == [list(range(n)[s]), list(range(n, 2 * n)[s])]


@SETTINGS
@given(st.integers(0, 2**62), bounds, bounds, steps)
def test_slice_length_on_huge_meta_dims(n, start, stop, step):
    s = slice(start, stop, step)
    t = tessera.empty(n, dtype=tessera.int8, device="meta")
    assert t[s].shape == (len(range(n)[s]),)


def test_slice_steps_must_be_positive():
    t = tessera.arange(5)
    with pytest.raises(ValueError, match=r"step"):
        t[::-1]
    with pytest.raises(ValueError):
        t[::0]
    with pytest.raises(ValueError):
        t[::-2**100]
