"""Linear algebra (matmul, mm, bmm, addmm, dot, outer and their out= forms)
against NumPy: 1-D, 2-D, batched and broadcast operands, strided (transposed)
inputs, every non-bool dtype; and the errors."""
import pytest

import tessera
from oracle import SETTINGS, TOLERANCE, check, strided, to_t  # noqa: F401

np = pytest.importorskip("numpy")
pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402

NUMERIC = [np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64]


def tdtype(d):
    return getattr(tessera, np.dtype(d).name)


def reference(fn, *arrays):
    """fn on float64 (floats) or int64-wrapped-to-dtype (integers) copies."""
    dtype = arrays[0].dtype
    if dtype.kind == "f":
        return fn(*[a.astype(np.float64) for a in arrays])
    return fn(*[a.astype(np.int64) for a in arrays]).astype(dtype)  # wraps like the kernel


def check_product(got, want, abs_want, k, dtype):
    """Products: the error bound grows with K and the magnitude of the terms."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        return check(got, want, dtype)
    assert got.shape == np.shape(want)
    out = np.asarray(got.to(tessera.float64).tolist(), dtype=np.float64).reshape(np.shape(want))
    rtol, atol = TOLERANCE[dtype]
    eps = np.finfo(dtype).eps
    bound = rtol * np.abs(want) + atol + (max(k, 1) + 1) * eps * np.asarray(abs_want, dtype=np.float64)
    assert np.all(np.abs(out - want) <= bound), (out, want)


def small(dtype):
    if np.dtype(dtype).kind == "f":
        return st.floats(-4, 4, width=np.dtype(dtype).itemsize * 8)
    info = np.iinfo(dtype)
    return st.integers(max(int(info.min), -50), min(int(info.max), 50))


@st.composite
def matmul_case(draw):
    dtype = draw(st.sampled_from(NUMERIC))
    n, k, p = draw(st.integers(0, 4)), draw(st.integers(0, 4)), draw(st.integers(0, 4))
    da, db = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch = [draw(st.integers(0, 3)) for _ in range(max(da, db) - 2)]

    def batch_of(d):  # trailing batch dims, each the common size or 1 (broadcast)
        dims = batch[len(batch) - (d - 2):] if d > 2 else []
        return tuple(draw(st.sampled_from([1, s])) for s in dims)

    sa = (k,) if da == 1 else batch_of(da) + (n, k)
    sb = (k,) if db == 1 else batch_of(db) + (k, p)
    return dtype, draw(strided(dtype, sa)), draw(strided(dtype, sb))


@SETTINGS
@given(matmul_case())
def test_matmul(case):
    dtype, a, b = case
    want = reference(np.matmul, a, b)
    got = tessera.matmul(to_t(a), to_t(b))
    assert got.dtype == tdtype(dtype)
    abs_want = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    check_product(got, want, abs_want, a.shape[-1], dtype)
    check_product(to_t(a) @ to_t(b), want, abs_want, a.shape[-1], dtype)
    out = tessera.empty(*np.shape(want), dtype=tdtype(dtype))
    assert tessera.matmul(to_t(a), to_t(b), out=out) is out
    check_product(out, want, abs_want, a.shape[-1], dtype)


@SETTINGS
@given(st.sampled_from(NUMERIC), st.integers(0, 5), st.integers(0, 5), st.integers(0, 5), st.integers(0, 3),
       st.data())
def test_mm_bmm_strided(dtype, n, k, p, batch, data):
    a = data.draw(strided(dtype, (n, k)))
    b = data.draw(strided(dtype, (k, p)))
    abs_want = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    check_product(tessera.mm(to_t(a), to_t(b)), reference(np.matmul, a, b), abs_want, k, dtype)
    check_product(to_t(a).mm(to_t(b)), reference(np.matmul, a, b), abs_want, k, dtype)
    a3 = data.draw(strided(dtype, (batch, n, k)))
    b3 = data.draw(strided(dtype, (batch, k, p)))
    want = reference(np.matmul, a3, b3)
    abs3 = np.abs(a3.astype(np.float64)) @ np.abs(b3.astype(np.float64))
    check_product(tessera.bmm(to_t(a3), to_t(b3)), want, abs3, k, dtype)
    out = tessera.empty(batch, n, p, dtype=tdtype(dtype))
    assert tessera.bmm(to_t(a3), to_t(b3), out=out) is out
    check_product(out, want, abs3, k, dtype)


def test_bfloat16_products():
    a = (np.arange(12, dtype=np.float32).reshape(3, 4) - 6) / 4
    b = (np.arange(20, dtype=np.float32).reshape(4, 5) - 7) / 8
    ta, tb = to_t(a).to(tessera.bfloat16), to_t(b).to(tessera.bfloat16)
    for got, want in [(ta @ tb, a @ b), (tessera.mm(ta.t().contiguous().t(), tb), a @ b),
                      (tessera.addmm(tb[0], ta, tb, beta=2), 2 * b[0] + a @ b),
                      (tessera.dot(ta[0], ta[1]), np.dot(a[0], a[1]))]:
        assert got.dtype == tessera.bfloat16
        np.testing.assert_allclose(np.asarray(got.to(tessera.float32).tolist()), want, rtol=2e-2, atol=2e-2)


def test_transposed_operands_match():
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal((33, 17)).astype(dtype)
        b = rng.standard_normal((29, 33)).astype(dtype)
        got = tessera.mm(to_t(a).t(), to_t(b).t())  # both handed to BLAS transposed
        np.testing.assert_allclose(np.from_dlpack(got), a.T @ b.T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matrix_vector_products(dtype):
    """Matrix x vector and vector x matrix (BLAS GEMV in the CPU plugin): dense,
    transposed and strided matrices, strided vectors, batched and broadcast."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((130, 77)).astype(dtype)
    at = rng.standard_normal((77, 130)).astype(dtype)
    v = rng.standard_normal(154).astype(dtype)
    w = rng.standard_normal(260).astype(dtype)
    cases = [
        (to_t(a), to_t(v[:77]), a @ v[:77]),                          # dense rows
        (to_t(at).t(), to_t(v[:77]), at.T @ v[:77]),                  # dense columns
        (to_t(a), to_t(v)[::2], a @ v[::2]),                          # strided vector
        (to_t(v[:130]), to_t(a), v[:130] @ a),                        # vector x matrix
        (to_t(w)[::2], to_t(at).t(), w[::2] @ at.T),                  # ... transposed, strided
        (to_t(a)[::2], to_t(v[:77]), a[::2] @ v[:77]),                # every other row
        (to_t(a).unsqueeze(0).expand(3, 130, 77), to_t(v[:77]).view(77, 1),
         np.broadcast_to(a, (3, 130, 77)) @ v[:77].reshape(77, 1)),   # batched, broadcast matrix
    ]
    for x, y, want in cases:
        got = np.from_dlpack(tessera.matmul(x, y).contiguous())
        np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-4)
    got = np.from_dlpack(tessera.bmm(to_t(np.stack([a, a * 2])), to_t(np.stack([v[:77], v[77:]]))[..., None]))
    np.testing.assert_allclose(got[..., 0], np.stack([a @ v[:77], 2 * a @ v[77:]]),
                               rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-4)
    # Vector . vector (BLAS's dot in the CPU plugin): long, strided, batched rows x columns, K = 0 and 1.
    x = rng.standard_normal(300009).astype(dtype)
    y = rng.standard_normal(300009).astype(dtype)
    tol = dict(rtol=1e-4 if dtype == np.float32 else 1e-11, atol=1e-3 if dtype == np.float32 else 1e-10)
    exact = lambda p, q: np.dot(p.astype(np.float64), q.astype(np.float64))  # noqa: E731
    np.testing.assert_allclose(tessera.dot(to_t(x), to_t(y)).item(), exact(x, y), **tol)
    np.testing.assert_allclose(tessera.dot(to_t(x)[::3], to_t(y)[1::3]).item(), exact(x[::3], y[1::3]), **tol)
    rows, cols = x[:4 * 5001].reshape(4, 1, 5001), y[:4 * 5001].reshape(4, 5001, 1)
    got = np.from_dlpack(tessera.bmm(to_t(rows), to_t(cols)).contiguous())
    np.testing.assert_allclose(got.reshape(4), [exact(rows[i, 0], cols[i, :, 0]) for i in range(4)], **tol)
    colsT = np.ascontiguousarray(y[:4 * 5001].reshape(4, 1, 5001))  # the columns as a transposed view
    got = np.from_dlpack(tessera.bmm(to_t(rows), to_t(colsT).transpose(1, 2)).contiguous())
    np.testing.assert_allclose(got.reshape(4), [exact(rows[i, 0], colsT[i, 0]) for i in range(4)], **tol)
    assert tessera.dot(to_t(x[:0]), to_t(y[:0])).item() == 0
    assert tessera.dot(to_t(x[:1]), to_t(y[:1])).item() == (x[0] * y[0]).item()


@SETTINGS
@given(st.sampled_from(NUMERIC), st.integers(0, 4), st.integers(0, 4), st.integers(0, 4), st.data())
def test_addmm(dtype, n, k, p, data):
    a = data.draw(strided(dtype, (n, k)))
    b = data.draw(strided(dtype, (k, p)))
    self_shape = data.draw(st.sampled_from([(n, p), (p,), (1, p), (n, 1), ()]))
    s = data.draw(strided(dtype, self_shape))
    floating = np.dtype(dtype).kind == "f"
    beta = data.draw(st.sampled_from([0, 1, 2, -1] + ([0.5] if floating else [])))
    alpha = data.draw(st.sampled_from([1, 3, -2] + ([0.25] if floating else [])))
    want = reference(lambda s, a, b: beta * s + alpha * (a @ b) if beta != 0 else alpha * (a @ b) + 0 * s, s, a, b)
    abs_want = (abs(beta) * np.abs(s.astype(np.float64)) + abs(alpha) * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))))
    got = tessera.addmm(to_t(s), to_t(a), to_t(b), beta=beta, alpha=alpha)
    check_product(got, want, abs_want, k, dtype)
    check_product(to_t(s).addmm(to_t(a), to_t(b), beta=beta, alpha=alpha), want, abs_want, k, dtype)
    if self_shape == (n, p):
        c = to_t(s.copy())
        assert c.addmm_(to_t(a), to_t(b), beta=beta, alpha=alpha) is c
        check_product(c, want, abs_want, k, dtype)
    out = tessera.empty(n, p, dtype=tdtype(dtype))
    assert tessera.addmm(to_t(s), to_t(a), to_t(b), beta=beta, alpha=alpha, out=out) is out
    check_product(out, want, abs_want, k, dtype)


def test_addmm_beta_zero_ignores_nan_and_aliasing():
    s = np.full((2, 2), np.nan, dtype=np.float32)
    a = np.eye(2, dtype=np.float32)
    got = tessera.addmm(to_t(s), to_t(a), to_t(a), beta=0)
    assert np.from_dlpack(got).tolist() == [[1, 0], [0, 1]]
    m = np.arange(4, dtype=np.float64).reshape(2, 2)
    t = to_t(m.copy())
    t.addmm_(t, t)  # reads the operands before writing self
    np.testing.assert_allclose(np.from_dlpack(t), m + m @ m)


@SETTINGS
@given(st.sampled_from(NUMERIC), st.integers(0, 6), st.data())
def test_dot_outer(dtype, n, data):
    a = data.draw(strided(dtype, (n,)))
    b = data.draw(strided(dtype, (n,)))
    abs_dot = np.dot(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    check_product(tessera.dot(to_t(a), to_t(b)), reference(np.dot, a, b), abs_dot, n, dtype)
    check_product(to_t(a).dot(to_t(b)), reference(np.dot, a, b), abs_dot, n, dtype)
    m = data.draw(st.integers(0, 4))
    c = data.draw(strided(dtype, (m,)))
    check(tessera.outer(to_t(a), to_t(c)), reference(np.outer, a, c), dtype)
    check(to_t(a).outer(to_t(c)), reference(np.outer, a, c), dtype)
    out = tessera.empty(n, m, dtype=tdtype(dtype))
    assert tessera.outer(to_t(a), to_t(c), out=out) is out
    check(out, reference(np.outer, a, c), dtype)
    out0 = tessera.empty(dtype=tdtype(dtype))
    assert tessera.dot(to_t(a), to_t(b), out=out0) is out0


def test_outer_promotes_and_bool():
    got = tessera.outer(tessera.ones(2, dtype=tessera.int32), tessera.ones(3, dtype=tessera.float64))
    assert got.dtype == tessera.float64 and got.shape == (2, 3)
    b = np.array([True, False])
    check(tessera.outer(to_t(b), to_t(b)), np.outer(b, b), np.bool_)


def test_errors():
    f = tessera.ones(2, 3)
    with pytest.raises(ValueError, match=r"mm: shapes \[2, 3\] and \[2, 3\] cannot be multiplied"):
        tessera.mm(f, f)
    with pytest.raises(ValueError, match="matmul: both arguments need at least 1 dimension"):
        tessera.matmul(tessera.ones(()), f)
    with pytest.raises(ValueError, match="matmul: shapes"):
        tessera.matmul(tessera.ones(2, 2, 3), f)
    with pytest.raises(ValueError, match="matmul"):
        tessera.matmul(tessera.ones(2, 2, 3), tessera.ones(3, 3, 1))
    with pytest.raises(TypeError, match="bool"):
        tessera.mm(tessera.ones(2, 2, dtype=tessera.bool), tessera.ones(2, 2, dtype=tessera.bool))
    with pytest.raises(TypeError, match="same dtype"):
        tessera.mm(f, tessera.ones(3, 2, dtype=tessera.float64))
    with pytest.raises(ValueError, match=r"addmm: self of shape \[3\] cannot be broadcast"):
        tessera.addmm(tessera.ones(3), f, tessera.ones(3, 2))
    with pytest.raises(TypeError, match="addmm: self and mat1 must have the same dtype"):
        tessera.addmm(tessera.ones(2, 2, dtype=tessera.float64), f, tessera.ones(3, 2))
    with pytest.raises(TypeError, match="beta and alpha must not be floating"):
        i = tessera.ones(2, 2, dtype=tessera.int32)
        tessera.addmm(i, i, i, alpha=0.5)
    with pytest.raises(ValueError, match=r"addmm_: self of shape \[2\] does not match"):
        tessera.ones(2).addmm_(f, tessera.ones(3, 2))
    with pytest.raises(ValueError, match="dot: expected 1-D self"):
        tessera.dot(f, f)
    with pytest.raises(ValueError, match="dot: inconsistent tensor sizes"):
        tessera.dot(tessera.ones(2), tessera.ones(3))
    with pytest.raises(TypeError, match="dot: expected both vectors to have the same dtype"):
        tessera.dot(tessera.ones(2), tessera.ones(2, dtype=tessera.float64))
    with pytest.raises(ValueError, match="outer: expected 1-D vec2"):
        tessera.outer(tessera.ones(2), f)
    with pytest.raises(ValueError, match="out= tensor has shape"):
        tessera.mm(f, tessera.ones(3, 2), out=tessera.empty(3, 3))


def test_meta_device():
    m = tessera.ones(4, 2, 3, device="meta")
    assert (m @ tessera.ones(3, 5, device="meta")).shape == (4, 2, 5)
    assert tessera.addmm(tessera.ones(5, device="meta"), m[0], tessera.ones(3, 5, device="meta")).shape == (2, 5)
    assert tessera.dot(tessera.ones(3, device="meta"), tessera.ones(3, device="meta")).shape == ()


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 13, 17), (64, 64, 64), (65, 3, 33), (6, 300, 16), (128, 128, 128),
                                   (5, 2000, 31), (130, 140, 150), (200, 800, 100), (97, 385, 256), (256, 256, 256)])
def test_float32_sizes_around_the_small_kernel(m, k, n):
    # Row-dense B with every row/column tail of the register-blocked kernel, and
    # sizes on both sides of its threshold (BLAS beyond); A plain and transposed.
    rng = np.random.default_rng(m * 1000 + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    bound = 4 * k * np.finfo(np.float32).eps * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) + 1e-6
    for ta in (to_t(a), to_t(np.ascontiguousarray(a.T)).t()):
        got = np.from_dlpack(ta @ to_t(b)).astype(np.float64)
        assert np.all(np.abs(got - want) <= bound)
    batched = np.from_dlpack(tessera.bmm(to_t(np.stack([a, -a])), to_t(np.stack([b, b]))))
    assert np.all(np.abs(batched[1] + want) <= bound)


@pytest.mark.parametrize("self_layout", ["full", "row", "column", "number", "every_other_column", "transposed"])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2), (0, 1)])
def test_float32_addmm_beyond_the_small_kernel(self_layout, beta, alpha):
    # Past the small kernel's size float32 addmm's product goes straight into out
    # (oneDNN on AMD CPUs), then alpha and beta * self in place: self in every
    # layout the kernel sees (dense, broadcast rows, columns or a number, strided,
    # transposed), beta 0 ignoring a NaN self, in place (self is out: through a
    # product buffer), into out= and into a transposed out=.
    rng = np.random.default_rng(len(self_layout) * 7 + int(beta * 4))
    m, k, n = 300, 260, 280
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    full = rng.standard_normal((m, n)).astype(np.float32)
    if self_layout == "full":
        s, ts = full, to_t(full)
    elif self_layout == "row":
        s = full[0]
        ts = to_t(s.copy())
    elif self_layout == "column":
        s = full[:, :1]
        ts = to_t(s.copy())
    elif self_layout == "number":
        s = full[0, 0]
        ts = to_t(np.array(s, np.float32))
    elif self_layout == "every_other_column":
        wide = np.repeat(full, 2, axis=1)
        s, ts = full, to_t(wide)[:, ::2]
    else:
        s, ts = full, to_t(np.ascontiguousarray(full.T)).t()
    if beta == 0:
        ts = ts * float("nan")
    product = a.astype(np.float64) @ b.astype(np.float64)
    want = alpha * product + beta * np.broadcast_to(np.float64(s), (m, n))
    eps = np.finfo(np.float32).eps
    bound = (4 * k * eps * abs(alpha) * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))
             + 2 * eps * np.abs(want) + 1e-6)

    def close(t):
        got = np.from_dlpack(t.contiguous()).astype(np.float64)
        assert got.shape == (m, n) and np.all(np.abs(got - want) <= bound), np.max(np.abs(got - want) - bound)

    close(tessera.addmm(ts, to_t(a), to_t(b), beta=beta, alpha=alpha))
    out = tessera.empty(m, n)
    assert tessera.addmm(ts, to_t(a), to_t(b), beta=beta, alpha=alpha, out=out) is out
    close(out)
    out_t = tessera.empty(n, m).t()
    assert tessera.addmm(ts, to_t(a), to_t(b), beta=beta, alpha=alpha, out=out_t) is out_t
    close(out_t)
    if self_layout == "full":
        c = ts.clone()
        assert c.addmm_(to_t(a), to_t(b), beta=beta, alpha=alpha) is c
        close(c)


@pytest.mark.parametrize("a_layout", ["dense", "transposed", "every_other_batch", "broadcast"])
@pytest.mark.parametrize("b_layout", ["dense", "transposed", "every_other_batch", "broadcast"])
def test_float32_batched_products_on_every_layout(a_layout, b_layout):
    # Batched products beyond the small kernel's size (on AMD CPUs oneDNN's
    # batched float32 matmul; elsewhere BLAS per matrix): each operand dense,
    # transposed per matrix, every other matrix of a larger batch, or one
    # matrix broadcast over the batch, into a fresh result and into a
    # transposed out=.
    rng = np.random.default_rng(len(a_layout) * 10 + len(b_layout))
    batch, m, k, n = 3, 96, 80, 72

    def operand(layout, rows, cols):
        x = rng.standard_normal((batch, rows, cols)).astype(np.float32)
        if layout == "dense":
            return x, to_t(x)
        if layout == "transposed":
            return x, to_t(np.ascontiguousarray(x.transpose(0, 2, 1))).transpose(1, 2)
        if layout == "every_other_batch":
            wide = np.empty((2 * batch, rows, cols), np.float32)
            wide[::2] = x
            wide[1::2] = np.nan
            return x, to_t(wide)[::2]
        x = np.broadcast_to(x[:1], x.shape)
        return x, to_t(np.ascontiguousarray(x[0])).expand(batch, rows, cols)

    a, ta = operand(a_layout, m, k)
    b, tb = operand(b_layout, k, n)
    want = a.astype(np.float64) @ b.astype(np.float64)
    bound = 4 * k * np.finfo(np.float32).eps * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) + 1e-6
    got = np.from_dlpack(tessera.bmm(ta, tb)).astype(np.float64)
    assert np.all(np.abs(got - want) <= bound)
    out = tessera.empty(batch, n, m).transpose(1, 2)
    assert tessera.bmm(ta, tb, out=out) is out
    got = np.from_dlpack(out.contiguous()).astype(np.float64)
    assert np.all(np.abs(got - want) <= bound)
