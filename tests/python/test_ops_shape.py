"""Shape ops (cat, stack, split, chunk, flip, roll, repeat, tile, pad, tril, triu)
against NumPy on hypothesis-generated inputs: every dtype, 0-d and zero-size
shapes, strided views; and their errors."""
import pytest

import tessera
from oracle import ALL_DTYPES, SETTINGS, check, elements, strided, to_t  # noqa: F401

np = pytest.importorskip("numpy")
pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

INT_ORDER = [np.uint8, np.int8, np.int16, np.int32, np.int64]


def torch_promote(a, b):
    """PyTorch's promote_types for two dimensioned tensors (NumPy's differs)."""
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    if a.kind == "b":
        return b
    if b.kind == "b":
        return a
    if a.kind == "f" and b.kind == "f":
        return a if a.itemsize > b.itemsize else b
    if a.kind == "f":
        return a
    if b.kind == "f":
        return b
    if {a, b} == {np.dtype(np.uint8), np.dtype(np.int8)}:
        return np.dtype(np.int16)
    return a if a.itemsize > b.itemsize else b


def tdtype(d):
    return getattr(tessera, np.dtype(d).name)


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
dtypes = st.sampled_from(ALL_DTYPES)


@st.composite
def array(draw, min_dims=0, dtype=None):
    dtype = dtype or draw(dtypes)
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=0, max_side=4))
    return draw(strided(dtype, shape))


@st.composite
def cat_case(draw, one_dtype=False, max_dims=3, max_parts=3):
    """Arrays to concatenate along a drawn dim; of one dtype (cat's fused _cat
    path) or each its own (promotion, copies)."""
    dtype = draw(dtypes) if one_dtype else None
    base = draw(hnp.array_shapes(min_dims=1, max_dims=max_dims, min_side=0, max_side=4))
    dim = draw(st.integers(-len(base), len(base) - 1))
    arrays = []
    for _ in range(draw(st.integers(1, max_parts))):
        shape = list(base)
        shape[dim] = draw(st.integers(0, 3))
        arrays.append(draw(strided(dtype or draw(dtypes), tuple(shape))))
    return arrays, dim


@SETTINGS
@given(cat_case())
def test_cat(case):
    arrays, dim = case
    want_dtype = arrays[0].dtype
    for a in arrays[1:]:
        want_dtype = torch_promote(want_dtype, a.dtype)
    want = np.concatenate([a.astype(want_dtype) for a in arrays], axis=dim)
    got = tessera.cat([to_t(a) for a in arrays], dim)
    assert got.dtype == tdtype(want_dtype)
    check(got, want, want_dtype)
    check(tessera.concat([to_t(a) for a in arrays], dim=dim), want, want_dtype)
    out = tessera.empty(*want.shape, dtype=tdtype(want_dtype))
    assert tessera.cat([to_t(a) for a in arrays], dim, out=out) is out
    check(out, want, want_dtype)


@SETTINGS
@given(cat_case(one_dtype=True, max_dims=4, max_parts=4))
def test_cat_one_dtype(case):
    arrays, dim = case
    want = np.concatenate(arrays, axis=dim)
    got = tessera.cat([to_t(a) for a in arrays], dim)
    assert got.dtype == tdtype(want.dtype)
    check(got, want, want.dtype)


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_cat_large_rows_split_across_threads(dim):
    rng = np.random.default_rng(dim)
    shapes = [[64, 48, 96], [64, 48, 96], [64, 48, 96]]
    for k, s in enumerate(shapes):
        s[dim] += 7 * k
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    arrays[1] = np.asfortranarray(arrays[1])  # one input not row-major: the strided path
    for group in (arrays[::2], arrays):
        want = np.concatenate(group, axis=dim)
        np.testing.assert_array_equal(np.asarray(tessera.cat([to_t(a) for a in group], dim)), want)


def test_cat_skips_legacy_empty_and_promotes():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = tessera.cat([to_t(a), tessera.empty(0, dtype=tessera.float64), to_t(a)], 1)
    assert got.dtype == tessera.float64  # the skipped tensor still takes part in promotion
    check(got, np.concatenate([a, a], 1).astype(np.float64), np.float64)
    only = tessera.cat([tessera.empty(0, dtype=tessera.uint8), tessera.empty(0, dtype=tessera.int8)])
    assert only.shape == (0,) and only.dtype == tessera.int16


def test_cat_errors():
    a = tessera.ones(2, 3)
    with pytest.raises(ValueError, match="non-empty"):
        tessera.cat([])
    with pytest.raises(ValueError, match="zero-dimensional"):
        tessera.cat([tessera.ones(()), tessera.ones(())])
    with pytest.raises(ValueError, match=r"cat: sizes of tensors must match except in dimension 0"):
        tessera.cat([a, tessera.ones(2, 4)])
    with pytest.raises(ValueError, match="same number of dimensions"):
        tessera.cat([a, tessera.ones(2, 3, 1)])
    with pytest.raises(IndexError, match="cat"):
        tessera.cat([a, a], 2)
    with pytest.raises(ValueError, match="out= tensor has shape"):
        tessera.cat([a, a], out=tessera.empty(3, 3))
    with pytest.raises(TypeError, match="cannot be cast"):
        tessera.cat([a, a], out=tessera.empty(4, 3, dtype=tessera.int32))


@SETTINGS
@given(st.integers(1, 3).flatmap(lambda n: st.tuples(
    dtypes.flatmap(lambda d: shapes.flatmap(lambda s: st.lists(strided(d, s), min_size=n, max_size=n))),
    st.integers(-4, 3))))
def test_stack(case):
    arrays, dim = case
    nd = arrays[0].ndim + 1
    if not -nd <= dim < nd:
        with pytest.raises(IndexError, match="stack"):
            tessera.stack([to_t(a) for a in arrays], dim)
        return
    got = tessera.stack([to_t(a) for a in arrays], dim=dim)
    check(got, np.stack(arrays, axis=dim), arrays[0].dtype)


def test_stack_errors():
    with pytest.raises(ValueError, match=r"stack: expects each tensor to be equal size"):
        tessera.stack([tessera.ones(2), tessera.ones(3)])
    with pytest.raises(ValueError, match="non-empty"):
        tessera.stack([])


def split_reference(a, sizes, dim):
    bounds = np.cumsum([0] + list(sizes))
    return [np.take(a, range(bounds[i], bounds[i + 1]), axis=dim) for i in range(len(sizes))]


@SETTINGS
@given(array(min_dims=1), st.integers(0, 5), st.data())
def test_split_and_chunk(a, size, data):
    dim = data.draw(st.integers(-a.ndim, a.ndim - 1))
    n = a.shape[dim]
    t = to_t(a)
    if size == 0 and n > 0:
        with pytest.raises(ValueError, match="split_size can only be 0"):
            t.split(0, dim)
    else:
        parts = tessera.split(t, size, dim)
        assert isinstance(parts, tuple)
        sizes = [n] if n == 0 else [min(size, n - s) for s in range(0, n, size)]
        want = split_reference(a, sizes, dim)
        assert len(parts) == len(want)
        for g, w in zip(parts, want):
            check(g, w, a.dtype)
    # split with a list of sizes summing to n
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
    sizes = [int(x) for x in np.diff([0] + cuts + [n])]
    for g, w in zip(t.split(sizes, dim), split_reference(a, sizes, dim)):
        check(g, w, a.dtype)
    # chunk: ceil(n / chunks) per piece (PyTorch's rule, unlike np.array_split)
    chunks = max(size, 1)
    got = tessera.chunk(t, chunks, dim)
    if n == 0:
        assert len(got) == chunks and all(g.shape == a.shape for g in got)
    else:
        step = -(-n // chunks)
        want = split_reference(a, [min(step, n - s) for s in range(0, n, step)], dim)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            check(g, w, a.dtype)


def test_split_errors():
    t = tessera.ones(5, 2)
    with pytest.raises(ValueError, match=r"split_with_sizes: expects split_sizes to sum exactly to 5"):
        t.split([2, 2])
    with pytest.raises(ValueError, match="non-negative"):
        t.split([6, -1])
    with pytest.raises(ValueError, match="chunk: expects `chunks` to be greater than 0"):
        t.chunk(0)
    with pytest.raises(IndexError, match="split"):
        t.split(2, 2)
    with pytest.raises(ValueError, match="at least a 1-dimensional"):
        tessera.ones(()).split(1)


@SETTINGS
@given(array(), st.data())
def test_flip(a, data):
    nd = max(a.ndim, 1)
    dims = data.draw(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd)) if a.ndim else []
    got = tessera.flip(to_t(a), dims)
    check(got, np.flip(a, axis=tuple(dims)) if dims else a, a.dtype)
    if dims:
        check(to_t(a).flip(*dims), np.flip(a, axis=tuple(dims)), a.dtype)


def test_flip_errors():
    with pytest.raises(ValueError, match="flip: dim 0 appears multiple times"):
        tessera.ones(2, 3).flip(0, -2)
    with pytest.raises(IndexError, match="flip"):
        tessera.ones(2, 3).flip(2)


@SETTINGS
@given(array(), st.data())
def test_roll(a, data):
    t = to_t(a)
    shift = data.draw(st.integers(-9, 9))
    check(tessera.roll(t, shift), np.roll(a, shift), a.dtype)
    if a.ndim:
        dims = data.draw(st.lists(st.integers(-a.ndim, a.ndim - 1), min_size=1, max_size=3))
        shifts = data.draw(st.lists(st.integers(-9, 9), min_size=len(dims), max_size=len(dims)))
        check(t.roll(shifts, dims), np.roll(a, shifts, axis=dims), a.dtype)


def test_roll_errors():
    with pytest.raises(ValueError, match="roll: shifts and dims must align"):
        tessera.ones(2, 3).roll((1, 2), 0)
    with pytest.raises(ValueError, match="roll: without dims"):
        tessera.ones(2, 3).roll((1, 2))


@SETTINGS
@given(array(), st.data())
def test_repeat_and_tile(a, data):
    reps = data.draw(st.lists(st.integers(0, 3), min_size=a.ndim, max_size=a.ndim + 2))
    t = to_t(a)
    # np.tile with len(reps) >= ndim is torch's repeat.
    check(t.repeat(*reps) if reps else t.repeat(()), np.tile(a, reps) if reps else a, a.dtype)
    check(tessera.repeat(t, reps), np.tile(a, reps) if reps else a, a.dtype)
    short = data.draw(st.lists(st.integers(0, 3), max_size=3))
    check(tessera.tile(t, short), np.tile(a, short) if short else a, a.dtype)


def test_repeat_errors():
    with pytest.raises(ValueError, match="repeat: number of repeat dims 1 can not be smaller"):
        tessera.ones(2, 3).repeat(2)
    with pytest.raises(ValueError, match="non-negative"):
        tessera.ones(2).repeat(-1)
    with pytest.raises(ValueError, match="too large"):
        tessera.ones(2, 2).repeat(2**62, 4)


def pad_reference(a, pad, value):
    out = a
    for p in range(len(pad) // 2):
        d = a.ndim - 1 - p
        lo, hi = pad[2 * p], pad[2 * p + 1]
        n = out.shape[d]
        out = np.take(out, range(max(0, -lo), max(max(0, -lo), n - max(0, -hi))), axis=d)
        widths = [(0, 0)] * a.ndim
        widths[d] = (max(lo, 0), max(hi, 0))
        out = np.pad(out, widths, mode="constant", constant_values=value)
    return out


@SETTINGS
@given(array(min_dims=1), st.data())
def test_pad(a, data):
    npairs = data.draw(st.integers(0, a.ndim))
    pad = []
    for p in range(npairs):
        n = a.shape[a.ndim - 1 - p]
        lo = data.draw(st.integers(-n, 3))
        hi = data.draw(st.integers(-(n + min(lo, 0)), 3))
        pad += [lo, hi]
    value = data.draw(elements(a.dtype))
    want = pad_reference(a, pad, value)
    check(tessera.pad(to_t(a), pad, value=value), want, a.dtype)
    check(to_t(a).pad(pad), pad_reference(a, pad, 0), a.dtype)


def test_pad_errors():
    t = tessera.ones(2, 3)
    with pytest.raises(NotImplementedError, match="pad: mode 'reflect' is not supported"):
        tessera.pad(t, (1, 1), mode="reflect")
    with pytest.raises(ValueError, match="unknown padding mode 'wrap'"):
        tessera.pad(t, (1, 1), mode="wrap")
    with pytest.raises(ValueError, match="divisible by 2"):
        tessera.pad(t, (1,))
    with pytest.raises(ValueError, match="too large"):
        tessera.pad(t, (1, 1, 1, 1, 1, 1))
    with pytest.raises(ValueError, match="negative output size"):
        tessera.pad(t, (-2, -2))
    with pytest.raises(ValueError, match="too large"):
        tessera.pad(t, (2**63 - 2, 2**63 - 2))
    assert len(t.chunk(2**63 - 1, 1)) == 3


@SETTINGS
@given(array(min_dims=2), st.integers(-5, 5))
def test_tril_triu(a, k):
    t = to_t(a)
    check(tessera.tril(t, k), np.tril(a, k), a.dtype)
    check(t.triu(diagonal=k), np.triu(a, k), a.dtype)
    c = to_t(a.copy())
    assert c.tril_(k) is c
    check(c, np.tril(a, k), a.dtype)
    c = to_t(a.copy())
    assert c.triu_(k) is c
    check(c, np.triu(a, k), a.dtype)
    out = tessera.empty(*a.shape, dtype=tdtype(a.dtype))
    assert tessera.triu(t, k, out=out) is out
    check(out, np.triu(a, k), a.dtype)


def test_tril_on_strided_inplace_view():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    b = to_t(base.copy())
    view = b.t()  # writes through a transposed view
    view.tril_(-1)
    check(b, np.tril(base.T, -1).T, np.float32)


def test_tril_errors():
    with pytest.raises(ValueError, match="tril: input tensor must have at least 2 dimensions"):
        tessera.ones(3).tril()
    with pytest.raises(ValueError, match="triu_"):
        tessera.ones(3).triu_()


@pytest.mark.parametrize("op", ["cat", "stack", "flip", "roll", "repeat", "tile", "pad", "tril", "triu"])
def test_bfloat16(op):
    a = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    t = to_t(a).to(tessera.bfloat16)
    fn = {
        "cat": (lambda x: tessera.cat([x, x], 1), lambda x: np.concatenate([x, x], 1)),
        "stack": (lambda x: tessera.stack([x, x], -1), lambda x: np.stack([x, x], -1)),
        "flip": (lambda x: x.flip(0, 1), lambda x: np.flip(x, (0, 1))),
        "roll": (lambda x: x.roll(1, 1), lambda x: np.roll(x, 1, 1)),
        "repeat": (lambda x: x.repeat(2, 1, 2), lambda x: np.tile(x, (2, 1, 2))),
        "tile": (lambda x: x.tile(2), lambda x: np.tile(x, 2)),
        "pad": (lambda x: tessera.pad(x, (1, -1), value=2.5), lambda x: pad_reference(x, (1, -1), 2.5)),
        "tril": (lambda x: x.tril(1), lambda x: np.tril(x, 1)),
        "triu": (lambda x: x.triu(-1), lambda x: np.triu(x, -1)),
    }[op]
    got = fn[0](t)
    assert got.dtype == tessera.bfloat16
    check(got.to(tessera.float32), fn[1](a), np.float32)


def test_meta_device():
    m = tessera.ones(2, 3, device="meta")
    assert tessera.cat([m, m], 1).shape == (2, 6)
    assert m.flip(0).shape == (2, 3)
    assert tessera.pad(m, (1, 1)).shape == (2, 5)
    assert m.tril().device == m.device


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.int32, np.int64, np.float64])
@pytest.mark.parametrize("shape,perm", [((33, 70), (1, 0)), ((1024, 96), (1, 0)), ((31, 32), (1, 0)),
                                         ((3, 40, 65), (0, 2, 1)), ((40, 3, 65), (2, 1, 0)),
                                         ((2, 3, 33, 34), (1, 0, 3, 2)), ((64, 64), (1, 0)),
                                         ((48, 80), (1, 0)), ((16, 17), (1, 0)), ((2, 56, 24), (0, 2, 1)),
                                         # Several work items of 16 bands of 16 columns, the last partial;
                                         # NCHW -> NHWC as conv2d's channels-last copy does it.
                                         ((40, 600), (1, 0)), ((2, 24, 23, 29), (0, 2, 3, 1))])
def test_transposing_copies(dtype, shape, perm):
    # contiguous() of a permuted view takes the cpu plugin's transposing copy when the
    # two innermost dims swap (4-byte elements in register blocks of 16, 8 or 4 by
    # level, the edges and other sizes element by element); every element must land
    # where NumPy puts it.
    rng = np.random.default_rng(7)
    a = rng.integers(0, 250, size=shape).astype(dtype)
    t = to_t(a).permute(*perm)
    assert np.array_equal(np.from_dlpack(t.contiguous()), np.ascontiguousarray(a.transpose(perm)))
    # Into a strided destination (every other row of a wider buffer) and from a flipped source.
    wide = tessera.zeros([*t.shape[:-1], 2 * t.shape[-1]], dtype=tdtype(dtype))
    dst = wide[..., ::2]
    dst.copy_(t)
    assert np.array_equal(np.from_dlpack(wide.contiguous())[..., ::2], np.ascontiguousarray(a.transpose(perm)))
    assert (np.from_dlpack(wide.contiguous())[..., 1::2] == 0).all()
    flipped = to_t(a).flip([0]).permute(*perm)
    assert np.array_equal(np.from_dlpack(flipped.contiguous()), np.ascontiguousarray(a[::-1].transpose(perm)))




@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
@pytest.mark.parametrize("shape,perm", [((32, 64), (1, 0)), ((17, 48), (1, 0)), ((40, 16), (1, 0)),
                                         ((33, 35), (1, 0)), ((2, 32, 8, 8), (0, 2, 3, 1))])
def test_transposing_copies_from_every_offset_in_a_line(dtype, shape, perm):
    # The transposing copy starts its squares where the source rows reach a 64-byte line
    # (when the rows are whole lines apart) and moves the columns before that element by
    # element: a source at each element offset within a line, rows a multiple of a line
    # apart or not, every element where NumPy puts it.
    rng = np.random.default_rng(8)
    n = int(np.prod(shape))
    per_line = 64 // np.dtype(dtype).itemsize
    base = rng.integers(0, 250, size=n + 2 * per_line).astype(dtype)
    start = (-base.ctypes.data % 64) // np.dtype(dtype).itemsize  # base[start] begins a line
    for k in range(per_line):
        a = base[start + k:start + k + n].reshape(shape)
        assert a.ctypes.data % 64 == k * np.dtype(dtype).itemsize
        got = np.from_dlpack(tessera.from_dlpack(a).permute(*perm).contiguous())
        assert np.array_equal(got, np.ascontiguousarray(a.transpose(perm))), k
@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "float64", "float32", "float16"])
def test_long_arange_matches_numpy(dtype):
    # Long enough for the vector loop and both threads' parts; int8 wraps (int64 arithmetic, then
    # the conversion's modulo 2^8), floating values are start + i * step rounded once.
    n = 100003
    start, step = (100, 7) if dtype.startswith("int") else (-3.5, 0.25)
    got = np.from_dlpack(tessera.arange(start, start + n * step, step, dtype=getattr(tessera, dtype)))
    if dtype.startswith("int"):
        want = (start + np.arange(n, dtype=np.int64) * step).astype(dtype)
    else:
        want = (start + np.arange(n, dtype=np.float64) * step).astype(dtype)
    assert got.shape == (n,)
    assert np.array_equal(got, want)
