"""Indexing ops against NumPy references (hypothesis-generated shapes, dtypes,
strided views), plus argument errors."""
import pytest

import tessera
from oracle import ALL_DTYPES, SETTINGS, check, elements, strided, to_t  # noqa: F401

np = pytest.importorskip("numpy")
pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def idx_t(a, dtype=np.int64):
    return to_t(np.array(a, dtype=dtype))  # a C-contiguous copy; 0-d stays 0-d


def np_scatter(out, dim, index, src, add):
    """Reference scatter / scatter_add along dim (out is modified)."""
    flat = out.ndim == 0
    if flat:
        out, index, dim = out.reshape(1), index.reshape(1), 0
        src = np.asarray(src).reshape(-1)[:1] if np.ndim(src) else src
    if np.ndim(src) == 0:
        src = np.broadcast_to(np.asarray(src, out.dtype), index.shape)
    with np.errstate(over="ignore"):
        for pos in np.ndindex(*index.shape):
            tgt = list(pos)
            tgt[dim] = index[pos]
            out[tuple(tgt)] = out[tuple(tgt)] + src[pos] if add else src[pos]
    return out.reshape(()) if flat else out


@st.composite
def dim_case(draw, index_bigger_ok=False):
    dtype = draw(st.sampled_from(ALL_DTYPES))
    shape = draw(shapes)
    a = draw(strided(dtype, shape))
    nd = max(len(shape), 1)
    dim = draw(st.integers(-nd, nd - 1))
    return dtype, a, dim


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.uint8])
@pytest.mark.parametrize("idt", [np.int64, np.int32])
def test_index_select_rows_of_a_table(dtype, idt):
    # Whole rows picked from a table (embedding's lookup: the cpu plugin's
    # row-copy loop, which prefetches rows ahead): many rows, repeats, a row
    # stride wider than the row, one-column rows, and through embedding.
    rng = np.random.default_rng(6)
    table = (rng.standard_normal((300, 40)) * 50).astype(dtype)
    index = rng.integers(0, 300, 1000)
    index[::7] = 299
    got = tessera.index_select(to_t(table), 0, idx_t(index, idt))
    check(got, np.take(table, index, axis=0), dtype)
    wide = np.zeros((300, 64), dtype)
    wide[:, :40] = table
    check(tessera.index_select(to_t(wide)[:, :40], 0, idx_t(index, idt)), np.take(table, index, axis=0), dtype)
    check(tessera.index_select(to_t(table[:, :1].copy()), 0, idx_t(index, idt)), np.take(table[:, :1], index, axis=0),
          dtype)
    if dtype in (np.float32, np.float64):
        ids = index.reshape(20, 50)
        check(tessera.embedding(to_t(table), idx_t(ids)), table[ids], dtype)


@SETTINGS
@given(dim_case(), st.data())
def test_index_select(case, data):
    dtype, a, dim = case
    size = a.shape[dim] if a.ndim else 1
    n = data.draw(st.integers(0, 5)) if a.ndim else 1
    index = np.asarray(data.draw(st.lists(st.integers(0, max(size - 1, 0)), min_size=n, max_size=n)), np.int64)
    if size == 0 and n:
        with pytest.raises(IndexError, match="index_select.*out of bounds"):
            tessera.index_select(to_t(a), dim, idx_t(index))
        return
    idt = data.draw(st.sampled_from([np.int64, np.int32]))
    got = tessera.index_select(to_t(a), dim, idx_t(index, idt))
    want = a.reshape(()) if a.ndim == 0 else np.take(a, index, axis=dim)
    check(got, want, dtype)
    check(to_t(a).index_select(dim, idx_t(index)), want, dtype)


@SETTINGS
@given(dim_case(), st.data())
def test_gather(case, data):
    dtype, a, dim = case
    if a.ndim == 0:
        got = tessera.gather(to_t(a), 0, idx_t(0))
        check(got, a, dtype)
        return
    d = dim % a.ndim
    ishape = tuple(data.draw(st.integers(0, s)) if k != d else data.draw(st.integers(0, 4))
                   for k, s in enumerate(a.shape))
    if a.shape[d] == 0:
        ishape = ishape[:d] + (0,) + ishape[d + 1:]
    index = data.draw(hnp.arrays(np.int64, ishape, elements=st.integers(0, max(a.shape[d] - 1, 0))))
    got = to_t(a).gather(dim, idx_t(index))
    want = np.take_along_axis(a[tuple(slice(0, s) if k != d else slice(None) for k, s in enumerate(ishape))],
                              index, axis=d) if index.size else np.zeros(ishape, a.dtype)
    check(got, want, dtype)


@pytest.mark.parametrize("layout", ["dense", "transposed", "every_other"])
@pytest.mark.parametrize("bad", [-1, 40, 2**62])
def test_gather_finds_a_bad_index_anywhere(layout, bad):
    # gather checks each run of indices as it copies (not in a first pass):
    # a bad value at the first, a middle or the last position of any run, of
    # a dense or strided index, must still raise, naming the value.
    idt = np.int64
    rng = np.random.default_rng(1)
    a = rng.standard_normal((300, 40)).astype(np.float32)
    good = rng.integers(0, 40, (300, 2 * 40)).astype(idt)
    for pos in [(0, 0), (0, 39), (150, 17), (299, 0), (299, 39)]:
        index = good.copy()
        if layout == "every_other":
            index[pos[0], 2 * pos[1]] = bad
            t_index = idx_t(index, idt)[:, ::2]
        elif layout == "transposed":
            index = np.ascontiguousarray(good[:, :40].T)
            index[pos[1], pos[0]] = bad
            t_index = idx_t(index, idt).transpose(0, 1)
        else:
            index = index[:, :40]
            index[pos] = bad
            t_index = idx_t(index, idt)
        with pytest.raises(IndexError, match=rf"gather.*index {bad} is out of bounds for dimension 1 with size 40"):
            to_t(a).gather(1, t_index)
    want_index = good[:, ::2]
    got = to_t(a).gather(1, idx_t(good, idt)[:, ::2])
    check(got, np.take_along_axis(a, want_index.astype(np.int64), 1), np.float32)


@SETTINGS
@given(dim_case(), st.data(), st.sampled_from(["scatter", "scatter_add", "value"]))
def test_scatter(case, data, op):
    dtype, a, dim = case
    if a.ndim == 0:
        index = np.zeros((), np.int64)
        src = np.asarray(data.draw(elements(dtype)), dtype)
    else:
        d = dim % a.ndim
        ishape = tuple(data.draw(st.integers(0, s)) if k != d else data.draw(st.integers(0, 6))
                       for k, s in enumerate(a.shape))
        if a.shape[d] == 0:
            ishape = ishape[:d] + (0,) + ishape[d + 1:]
        index = data.draw(hnp.arrays(np.int64, ishape, elements=st.integers(0, max(a.shape[d] - 1, 0))))
        src = data.draw(strided(dtype, ishape))
    if op == "scatter":
        # Duplicated targets have no defined winner: make the targets unique.
        if a.ndim:
            d = dim % a.ndim
            index = np.ascontiguousarray(index[tuple(slice(0, 1) if k == d else slice(None)
                                                     for k in range(a.ndim))])
            src = np.ascontiguousarray(src[tuple(slice(0, 1) if k == d else slice(None) for k in range(a.ndim))])
        got = tessera.scatter(to_t(a), dim, idx_t(index), to_t(np.array(src)))
        want = np_scatter(a.copy(), dim % max(a.ndim, 1), index, src, False)
    elif op == "value":
        v = data.draw(elements(dtype))
        got = to_t(a).scatter(dim, idx_t(index), v)
        want = np_scatter(a.copy(), dim % max(a.ndim, 1), index, np.asarray(v, dtype), False)
    else:
        src_t = to_t(np.array(src)) if np.ndim(src) == 0 else to_t(src)
        got = tessera.scatter_add(to_t(a), dim, idx_t(index), src_t)
        want = np_scatter(a.copy(), dim % max(a.ndim, 1), index, src, True)
        if np.dtype(dtype) == np.bool_:
            want = want.astype(bool)
    tol = np.float32 if np.dtype(dtype) == np.float16 and op == "scatter_add" else dtype
    check(got, want, tol)


@SETTINGS
@given(st.sampled_from(ALL_DTYPES), st.data())
def test_index_add_in_place(dtype, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    a = data.draw(strided(dtype, shape))
    dim = data.draw(st.integers(0, len(shape) - 1))
    n = data.draw(st.integers(0, 6))
    index = np.asarray(data.draw(st.lists(st.integers(0, shape[dim] - 1), min_size=n, max_size=n)), np.int64)
    sshape = shape[:dim] + (n,) + shape[dim + 1:]
    source = data.draw(strided(dtype, sshape))
    alpha = 1 if np.dtype(dtype) == np.bool_ else data.draw(st.integers(0 if np.dtype(dtype) == np.uint8 else -2, 2))
    want = a.copy()
    for k in range(n):
        sel = [slice(None)] * len(shape)
        sel[dim] = index[k]
        src_sel = [slice(None)] * len(shape)
        src_sel[dim] = k
        if np.dtype(dtype) == np.bool_:
            want[tuple(sel)] |= source[tuple(src_sel)]
        else:
            with np.errstate(over="ignore"):
                want[tuple(sel)] = (want[tuple(sel)] + alpha * source[tuple(src_sel)]).astype(dtype)
    t = to_t(a.copy())
    r = t.index_add_(dim, idx_t(index), to_t(source), alpha=alpha)
    assert r is t
    check(t, want, np.float32 if np.dtype(dtype) == np.float16 else dtype)


@st.composite
def masked_case(draw):
    dtype = draw(st.sampled_from(ALL_DTYPES))
    s = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=4))
    a = draw(strided(dtype, s.input_shapes[0]))
    mask = draw(strided(np.bool_, s.input_shapes[1]))
    return dtype, a, mask


@SETTINGS
@given(masked_case(), st.data())
def test_masked_fill_and_select(case, data):
    dtype, a, mask = case
    v = data.draw(elements(dtype))
    want = np.where(mask, np.asarray(v, dtype), a)
    check(tessera.masked_fill(to_t(a), to_t(mask), v), want, dtype)
    check(to_t(a).masked_fill(to_t(mask), to_t(np.asarray(v, dtype))), want, dtype)
    out = tessera.empty(*want.shape, dtype=to_t(a).dtype)
    tessera.masked_fill(to_t(a), to_t(mask), v, out=out)
    check(out, want, dtype)
    ab, mb = np.broadcast_arrays(a, mask)
    check(tessera.masked_select(to_t(a), to_t(mask)), ab[mb], dtype)
    if want.shape == a.shape and a.size:  # (check_writable refuses some zero-size imports)
        t = to_t(a.copy())
        assert t.masked_fill_(to_t(mask), v) is t
        check(t, want, dtype)


@SETTINGS
@given(st.sampled_from(ALL_DTYPES).flatmap(lambda d: st.tuples(st.just(d), shapes.flatmap(lambda s: strided(d, s)))),
       st.data())
def test_take(case, data):
    dtype, a = case
    n = a.size
    ishape = data.draw(shapes)
    if n == 0:
        ishape = ishape if 0 in ishape else ishape + (0,)
    index = data.draw(hnp.arrays(np.int64, ishape, elements=st.integers(-n, max(n - 1, -n))))
    check(tessera.take(to_t(a), idx_t(index)), np.take(a, index) if index.size else np.zeros(ishape, a.dtype), dtype)


@SETTINGS
@given(st.sampled_from(ALL_DTYPES), st.data())
def test_embedding_and_one_hot(dtype, data):
    rows = data.draw(st.integers(1, 6))
    weight = data.draw(strided(dtype, (rows, data.draw(st.integers(0, 3)))))
    ishape = data.draw(shapes)
    indices = data.draw(hnp.arrays(np.int64, ishape, elements=st.integers(0, rows - 1)))
    check(tessera.embedding(to_t(weight), idx_t(indices, data.draw(st.sampled_from([np.int64, np.int32])))),
          weight[indices], dtype)
    classes = rows + data.draw(st.integers(0, 2))
    check(tessera.one_hot(idx_t(indices), classes), np.eye(classes, dtype=np.int64)[indices], np.int64)
    if indices.size:
        check(tessera.one_hot(idx_t(indices)), np.eye(indices.max() + 1, dtype=np.int64)[indices], np.int64)


def test_scatter_add_duplicates_with_threads():
    n = 1 << 18
    index = np.random.default_rng(0).integers(0, 8, n)
    src = np.ones(n, np.int64)
    got = tessera.scatter_add(tessera.zeros(8, dtype=tessera.int64), 0, idx_t(index), to_t(src))
    check(got, np.bincount(index, minlength=8), np.int64)
    got = tessera.zeros(8, dtype=tessera.float64).index_add_(0, idx_t(index), to_t(src.astype(np.float64)))
    check(got, np.bincount(index, minlength=8).astype(np.float64), np.float64)
    # 2-D, both dims: tiles of rows (dim 0) and plain lines (dim 1) split across threads.
    rng = np.random.default_rng(1)
    for dim in (0, 1):
        src = rng.integers(-5, 5, (4096, 300) if dim == 0 else (300, 4096)).astype(np.int64)
        index = rng.integers(0, 37, 4096)
        want = np.zeros((37, 300) if dim == 0 else (300, 37), np.int64)
        np.add.at(want, (index,) if dim == 0 else (slice(None), index), src)
        got = tessera.zeros(*want.shape, dtype=tessera.int64).index_add_(dim, idx_t(index), to_t(src))
        check(got, want, np.int64)
        full_index = np.broadcast_to(index[:, None] if dim == 0 else index[None, :], src.shape)
        got = tessera.zeros(*want.shape, dtype=tessera.int64).scatter_add_(dim, idx_t(full_index), to_t(src))
        check(got, want, np.int64)


def np_scatter_along(a, dim, index, src, add):
    """scatter (add: scatter_add) into a copy of a, with NumPy's indexing: the
    updates in index order (np.add.at accumulates duplicates in order)."""
    out = a.copy()
    pos = list(np.indices(index.shape, sparse=True))
    pos[dim] = index
    if add:
        if out.dtype == np.bool_:
            hits = np.zeros(out.shape, np.int64)
            np.add.at(hits, tuple(pos), src.astype(np.int64))
            return out | (hits > 0)
        with np.errstate(over="ignore"):
            np.add.at(out, tuple(pos), src)
    else:
        out[tuple(pos)] = src
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.int8, np.uint8, np.bool_])
@pytest.mark.parametrize("layout", ["dense", "strided_self", "transposed_self", "fewer_rows", "strided_index", "dim0"])
@pytest.mark.parametrize("op", ["scatter", "scatter_add"])
def test_functional_scatter_writes_a_new_tensor(dtype, layout, op):
    # The functional forms run one _scatter kernel: where index covers every
    # row of self along its innermost dim, each row is copied and updated in
    # one pass (indices checked per row); other layouts copy self whole first.
    # Small integers: every sum is exact in every dtype, so the result must
    # equal NumPy's bit for bit, duplicates accumulated in index order.
    rng = np.random.default_rng(3)
    rows, cols = 300, 257
    a = rng.integers(-3, 4, (rows, cols)).astype(dtype)
    dim = 1
    n_along = 400 if op == "scatter_add" else cols  # scatter: a permutation per row (no duplicates)
    if op == "scatter_add":
        index = rng.integers(0, cols, (rows, n_along))
    else:
        index = rng.permuted(np.tile(np.arange(cols), (rows, 1)), axis=1)
    src = rng.integers(-3, 4, index.shape).astype(dtype)
    t_self, t_index, t_src = to_t(a), idx_t(index), to_t(src)
    if layout == "transposed_self":
        t_self = to_t(np.ascontiguousarray(a.T)).transpose(0, 1)
    elif layout == "strided_self":  # every other column of a wider tensor
        wide = np.zeros((rows, 2 * cols), dtype)
        wide[:, ::2] = a
        t_self = to_t(wide)[:, ::2]
    elif layout == "fewer_rows":
        index, src = index[: rows // 2], src[: rows // 2]
        t_index, t_src = idx_t(index), to_t(src)
    elif layout == "strided_index":
        wide = np.zeros((rows, 2 * index.shape[1]), np.int64)
        wide[:, ::2] = index
        wide_src = np.zeros((rows, 2 * index.shape[1]), dtype)
        wide_src[:, 1::2] = src
        t_index, t_src = idx_t(wide)[:, ::2], to_t(wide_src)[:, 1::2]
    elif layout == "dim0":  # lines down the columns: the whole copy, then tiles of rows
        dim = 0
        if op == "scatter_add":
            index = rng.integers(0, rows, (450, cols))
        else:
            index = rng.permuted(np.tile(np.arange(rows), (cols, 1)), axis=1).T.copy()
        src = rng.integers(-3, 4, index.shape).astype(dtype)
        t_index, t_src = idx_t(index), to_t(src)
    before = np.asarray(t_self.tolist()).copy()
    fn = tessera.scatter_add if op == "scatter_add" else tessera.scatter
    got = fn(t_self, dim, t_index, t_src)
    want = np_scatter_along(a, dim, index, src, op == "scatter_add")
    assert got.dtype == t_self.dtype and got.shape == t_self.shape
    assert np.asarray(got.tolist(), dtype=want.dtype).tolist() == want.tolist()
    assert np.asarray(t_self.tolist()).tolist() == before.tolist()  # self untouched


@pytest.mark.parametrize("op", ["scatter", "scatter_add"])
@pytest.mark.parametrize("bad", [-1, 257, 2**62])
def test_functional_scatter_finds_a_bad_index_anywhere(op, bad):
    # _scatter checks each row's indices as it reaches the row: a bad value at
    # the first, a middle or the last position of any row raises, naming the
    # public op and the value, and self is never written.
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 257)).astype(np.float32)
    src = rng.standard_normal((300, 257)).astype(np.float32)
    good = rng.integers(0, 257, (300, 257))
    fn = tessera.scatter_add if op == "scatter_add" else tessera.scatter
    for dim, pos in [(1, (0, 0)), (1, (0, 256)), (1, (150, 17)), (1, (299, 256)), (0, (0, 0)), (0, (299, 100))]:
        index = good.copy() if dim == 1 else good % 300
        index[pos] = bad if dim == 1 or bad != 257 else 300
        t_self = to_t(a.copy())
        value = index[pos]
        with pytest.raises(IndexError, match=rf"{op}\b.*index {value} is out of bounds for dimension {dim}"):
            fn(t_self, dim, idx_t(index), to_t(src))
        assert np.asarray(t_self.tolist()).tolist() == a.tolist()


def test_errors():
    a = tessera.zeros(3, 2)
    with pytest.raises(IndexError, match=r"index_select.*index 5 is out of bounds for dimension 0 with size 3"):
        tessera.index_select(a, 0, idx_t([0, 5]))
    with pytest.raises(IndexError, match=r"gather.*index -1"):
        a.gather(1, idx_t([[-1]]))
    with pytest.raises(IndexError, match=r"take.*index -7.*size 6"):
        a.take(idx_t([-7]))
    with pytest.raises(IndexError, match=r"scatter_add_.*index 3"):
        a.scatter_add_(0, idx_t([[3, 0]]), tessera.ones(1, 2))
    with pytest.raises(IndexError, match=r"embedding"):
        tessera.embedding(a, idx_t([4]))
    with pytest.raises(TypeError, match=r"gather.*int64"):
        a.gather(0, idx_t([[0]], np.int32))
    with pytest.raises(TypeError, match=r"masked_fill.*bool mask"):
        a.masked_fill(tessera.zeros(2, dtype=tessera.uint8), 1)
    with pytest.raises(ValueError, match=r"masked_fill.*0-d"):
        a.masked_fill(tessera.zeros(2, dtype=tessera.bool), tessera.zeros(2))
    with pytest.raises(ValueError, match=r"masked_fill_.*broadcast"):
        tessera.zeros(2).masked_fill_(tessera.zeros(3, 2, dtype=tessera.bool), 1)
    with pytest.raises(TypeError, match=r"scatter_.*dtype"):
        a.scatter_(0, idx_t([[0]]), tessera.ones(1, 1, dtype=tessera.float64))
    with pytest.raises(ValueError, match=r"index_select.*1-D"):
        a.index_select(0, idx_t([[0]]))
    with pytest.raises(IndexError, match=r"index_select.*dim"):
        a.index_select(2, idx_t([0]))
    with pytest.raises(ValueError, match=r"one_hot.*non-negative"):
        tessera.one_hot(idx_t([-1, 0]))
    with pytest.raises(TypeError, match=r"one_hot.*int64"):
        tessera.one_hot(idx_t([0], np.int32))
    with pytest.raises(ValueError, match=r"embedding.*padding_idx"):
        tessera.embedding(a, idx_t([0]), padding_idx=3)
    with pytest.raises(ValueError, match=r"masked_fill: out= tensor has shape"):
        tessera.masked_fill(a, tessera.zeros(2, dtype=tessera.bool), 1, out=tessera.zeros(2))
    with pytest.raises(TypeError, match=r"masked_fill: result type"):
        tessera.masked_fill(a, tessera.zeros(2, dtype=tessera.bool), 1, out=tessera.zeros(3, 2, dtype=tessera.int32))
    with pytest.raises(NotImplementedError, match=r"masked_select"):
        tessera.masked_select(tessera.zeros(2, device="meta"), tessera.zeros(2, dtype=tessera.bool, device="meta"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32])
def test_index_add_whole_rows_in_index_order(dtype):
    """index_add_ along dim 0 of a 2-D tensor (the embedding backward): rows
    added in index order, repeated indices included, from dense rows and from
    rows of one value (an expanded gradient); np.add.at adds in the same
    order, so the sums agree bit for bit."""
    rng = np.random.default_rng(4)
    rows, cols, n = 50, 67, 300
    idx = rng.integers(0, rows, n)
    idx[:10] = 3  # repeats
    base = (rng.standard_normal((rows, cols)) * 4).astype(dtype)
    src = (rng.standard_normal((n, cols)) * 4).astype(dtype)
    for source, src_np in [(to_t(src), src), (to_t(src[:, :1]).expand([n, cols]), np.broadcast_to(src[:, :1], (n, cols)))]:
        want = base.copy()
        np.add.at(want, idx, src_np)
        t = to_t(base.copy())
        t.index_add_(0, to_t(idx.astype(np.int64)), source)
        np.testing.assert_array_equal(np.asarray(t.to(tessera.float64) if dtype == np.float16 else t),
                                      want.astype(np.float64) if dtype == np.float16 else want)
    # Out-of-range indices are refused before anything is written.
    t = to_t(base.copy())
    bad = idx.copy()
    bad[-1] = rows
    with pytest.raises(IndexError, match="index_add_"):
        t.index_add_(0, to_t(bad.astype(np.int64)), to_t(src))
    np.testing.assert_array_equal(np.asarray(t.to(tessera.float64)), base.astype(np.float64))
