"""nn ops against references written in NumPy here (log-sum-exp softmax, direct
convolution and pooling loops, losses), on hypothesis inputs: 0-d and zero-size
shapes, strided views, every floating dtype; and every bad argument's error."""
import math

import pytest

import tessera
from oracle import SETTINGS, strided, to_t

np = pytest.importorskip("numpy")
pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

FLOATS = [np.float16, np.float32, np.float64]
# (rtol, atol) of results computed in float32/float64 and rounded once.
TOL = {np.dtype(np.float16): (3e-3, 2e-3), np.dtype(np.float32): (2e-5, 2e-5), np.dtype(np.float64): (1e-10, 1e-10)}
BF16_TOL = (2e-2, 2e-2)


def to_np(t):
    t = t.contiguous()
    if t.dtype == tessera.bfloat16:
        t = t.to(tessera.float32)
    return np.asarray(t.tolist(), dtype=np.float64).reshape(t.shape) if t.numel() else np.zeros(t.shape)


def close(got, want, dtype, scale=1.0):
    rtol, atol = BF16_TOL if dtype == "bfloat16" else TOL[np.dtype(dtype)]
    want = np.asarray(want, dtype=np.float64)
    assert tuple(got.shape) == want.shape
    np.testing.assert_allclose(to_np(got), want, rtol=rtol, atol=atol * scale)


def as_bf16(a):
    """A bfloat16 tensor of a float32 array, and the array rounded the same way."""
    t = to_t(np.ascontiguousarray(a, dtype=np.float32)).to(tessera.bfloat16)
    return t, to_np(t)


# ---------------------------------------------------------------------------
# references
# ---------------------------------------------------------------------------

def ref_softmax(x, dim, log=False):
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        return np.float64(0.0) if log else np.float64(1.0)
    m = x.max(axis=dim, keepdims=True) if x.shape[dim] else 0
    s = np.exp(x - m).sum(axis=dim, keepdims=True)
    return x - m - np.log(s) if log else np.exp(x - m) / s


def ref_layer_norm(x, k, w, b, eps):
    x = np.asarray(x, dtype=np.float64)
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def ref_conv2d(x, w, b, stride, padding, dilation, groups):
    """Direct convolution: one einsum per kernel tap over the padded input."""
    x = np.asarray(x, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    (sh, sw), (dh, dw) = stride, dilation
    O, Cg, kH, kW = w.shape
    if padding == "valid":
        pads = ((0, 0), (0, 0))
    elif padding == "same":
        th, tw = dh * (kH - 1), dw * (kW - 1)
        pads = ((th // 2, th - th // 2), (tw // 2, tw - tw // 2))
    else:
        pads = ((padding[0], padding[0]), (padding[1], padding[1]))
    xp = np.pad(x, ((0, 0), (0, 0)) + pads)
    N, H, W = x.shape[0], xp.shape[2], xp.shape[3]
    Ho, Wo = (H - dh * (kH - 1) - 1) // sh + 1, (W - dw * (kW - 1) - 1) // sw + 1
    out = np.zeros((N, O, Ho, Wo))
    Og = O // groups
    for g in range(groups):
        for i in range(kH):
            for j in range(kW):
                patch = xp[:, g * Cg:(g + 1) * Cg, i * dh:i * dh + sh * (Ho - 1) + 1:sh, j * dw:j * dw + sw * (Wo - 1) + 1:sw]
                out[:, g * Og:(g + 1) * Og] += np.einsum("nchw,oc->nohw", patch, w[g * Og:(g + 1) * Og, :, i, j])
    if b is not None:
        out += np.asarray(b, dtype=np.float64)[None, :, None, None]
    return out[0] if unbatched else out


def pool_out(n, k, s, p, d, ceil):
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= n + p:
        out -= 1
    return out


def ref_max_pool(x, k, s, p, d, ceil):
    x = np.asarray(x, dtype=np.float64)
    H, W = x.shape[-2:]
    Ho, Wo = pool_out(H, k[0], s[0], p[0], d[0], ceil), pool_out(W, k[1], s[1], p[1], d[1], ceil)
    out = np.full(x.shape[:-2] + (Ho, Wo), -np.inf)
    for oh in range(Ho):
        for ow in range(Wo):
            for i in range(k[0]):
                ih = oh * s[0] - p[0] + i * d[0]
                if not 0 <= ih < H:
                    continue
                for j in range(k[1]):
                    iw = ow * s[1] - p[1] + j * d[1]
                    if 0 <= iw < W:
                        out[..., oh, ow] = np.maximum(out[..., oh, ow], x[..., ih, iw])  # NaN wins
    return out


def ref_avg_pool(x, k, s, p, ceil, include_pad, divisor):
    x = np.asarray(x, dtype=np.float64)
    H, W = x.shape[-2:]
    Ho, Wo = pool_out(H, k[0], s[0], p[0], 1, ceil), pool_out(W, k[1], s[1], p[1], 1, ceil)
    out = np.zeros(x.shape[:-2] + (Ho, Wo))
    for oh in range(Ho):
        for ow in range(Wo):
            h0, w0 = oh * s[0] - p[0], ow * s[1] - p[1]
            h1, w1 = min(h0 + k[0], H + p[0]), min(w0 + k[1], W + p[1])
            size = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, H), min(w1, W)
            total = x[..., h0:h1, w0:w1].sum(axis=(-1, -2))
            div = divisor if divisor else (size if include_pad else (h1 - h0) * (w1 - w0))
            out[..., oh, ow] = total / div
    return out


def ref_nll(logp, target, weight, ignore_index, reduction, smoothing=0.0):
    logp = np.asarray(logp, dtype=np.float64)
    target = np.asarray(target)
    C = logp.shape[0] if logp.ndim == 1 else logp.shape[1]
    if logp.ndim == 1:
        lp = logp[None, :]
        t = target.reshape(1)
    else:
        lp = np.moveaxis(logp, 1, -1).reshape(-1, C)  # [N * d..., C]
        t = target.reshape(-1)
    w = np.ones(C) if weight is None else np.asarray(weight, dtype=np.float64)
    losses = np.zeros(t.shape[0])
    total_w = 0.0
    for k, c in enumerate(t):
        if c == ignore_index:
            continue
        losses[k] = -(1 - smoothing) * w[c] * lp[k, c] - smoothing / C * (w * lp[k]).sum()
        total_w += w[c]
    if reduction == "none":
        return losses.reshape(target.shape)
    if reduction == "sum":
        return losses.sum()
    return losses.sum() / total_w if total_w else np.nan


# ---------------------------------------------------------------------------
# softmax, log_softmax
# ---------------------------------------------------------------------------

@st.composite
def softmax_case(draw):
    dtype = draw(st.sampled_from(FLOATS))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6))
    x = draw(strided(dtype, shape))
    dim = draw(st.integers(-max(len(shape), 1), max(len(shape), 1) - 1))
    return dtype, x, dim


@SETTINGS
@given(softmax_case(), st.booleans())
def test_softmax_matches_log_sum_exp(case, log):
    dtype, x, dim = case
    fn = tessera.log_softmax if log else tessera.softmax
    got = fn(to_t(x), dim)
    assert got.dtype == getattr(tessera, np.dtype(dtype).name)
    close(got, ref_softmax(x, dim, log), dtype, scale=100 if log else 1)
    method = to_t(x).log_softmax(dim) if log else to_t(x).softmax(dim)
    close(method, ref_softmax(x, dim, log), dtype, scale=100 if log else 1)


@SETTINGS
@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5), elements=st.floats(-50, 50, width=32)),
       st.booleans())
def test_softmax_bfloat16_and_dtype_argument(x, log):
    t, xr = as_bf16(x)
    fn = tessera.log_softmax if log else tessera.softmax
    got = fn(t, -1)
    assert got.dtype == tessera.bfloat16
    close(got, ref_softmax(xr, -1, log), "bfloat16", scale=10 if log else 1)
    # dtype= casts first: float32 input computed and returned in float64.
    got64 = fn(to_t(x), -1, dtype=tessera.float64)
    assert got64.dtype == tessera.float64
    close(got64, ref_softmax(x.astype(np.float32), -1, log), np.float64)


@pytest.mark.parametrize("n", [1, 7, 8, 31, 32, 33, 100, 1000, 4099])
def test_softmax_rows_of_every_vector_tail(n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((3, n)) * 20).astype(np.float32)
    for log in (False, True):
        got = (tessera.log_softmax if log else tessera.softmax)(to_t(x), 1)
        close(got, ref_softmax(x, 1, log), np.float32, scale=10)
    assert abs(to_np(tessera.softmax(to_t(x), 1)).sum(axis=1) - 1).max() < 1e-5


def test_softmax_large_input_parallel_and_transposed():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((512, 300)) * 10).astype(np.float32)
    close(tessera.softmax(to_t(x), -1), ref_softmax(x, -1), np.float32)
    close(tessera.softmax(to_t(x.T), 0), ref_softmax(x.T, 0), np.float32)
    close(tessera.log_softmax(to_t(x), 0), ref_softmax(x, 0, True), np.float32, scale=10)
    # dense, dim not last: columns computed together (some chunks partial)
    x4 = (rng.standard_normal((2, 5, 7, 260)) * 10)
    for dtype in (np.float32, np.float64):
        for dim in (0, 1, 2):
            close(tessera.softmax(to_t(x4.astype(dtype)), dim), ref_softmax(x4.astype(dtype), dim), dtype)
            close(tessera.log_softmax(to_t(x4.astype(dtype)), dim), ref_softmax(x4.astype(dtype), dim, True), dtype,
                  scale=10)


def test_softmax_extreme_values():
    x = np.array([[0.0, -np.inf, 1.0], [1e30, 1e30, -1e30], [-200.0, -100.0, -100.0], [np.nan, 1.0, 2.0]],
                 dtype=np.float32)
    got = to_np(tessera.softmax(to_t(x), 1))
    want = ref_softmax(x[:3], 1)
    np.testing.assert_allclose(got[:3], want, rtol=1e-5, atol=1e-7)
    assert got[0, 1] == 0.0
    assert np.isnan(got[3]).all()
    lg = to_np(tessera.log_softmax(to_t(x), 1))
    assert lg[0, 1] == -np.inf and np.isnan(lg[3]).all()
    np.testing.assert_allclose(lg[2], ref_softmax(x[2:3], 1, True)[0], rtol=1e-6)


def test_softmax_errors():
    with pytest.raises(TypeError, match="softmax: expected a floating input, got int64"):
        tessera.softmax(to_t(np.arange(3)), 0)
    with pytest.raises(TypeError, match="log_softmax: dtype must be a floating dtype"):
        tessera.log_softmax(to_t(np.ones(3)), 0, dtype=tessera.int32)
    with pytest.raises(IndexError, match="softmax"):
        tessera.softmax(to_t(np.ones((2, 3))), 2)
    # an integer input with a floating dtype is fine (cast first)
    close(tessera.softmax(to_t(np.arange(3)), 0, dtype=tessera.float32), ref_softmax(np.arange(3), 0), np.float32)


# ---------------------------------------------------------------------------
# layer_norm
# ---------------------------------------------------------------------------

@SETTINGS
@given(st.sampled_from(FLOATS), hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5), st.data())
def test_layer_norm(dtype, shape, data):
    k = data.draw(st.integers(1, len(shape)))
    x = data.draw(strided(dtype, shape))
    ns = shape[len(shape) - k:]
    affine = data.draw(st.booleans())
    w = data.draw(strided(dtype, ns)) if affine else None
    b = data.draw(strided(dtype, ns)) if affine and data.draw(st.booleans()) else None
    eps = data.draw(st.sampled_from([1e-5, 1e-2]))
    got = tessera.layer_norm(to_t(x), list(ns), None if w is None else to_t(w), None if b is None else to_t(b), eps)
    want = ref_layer_norm(x, k, w, b, eps)
    close(got, want, dtype, scale=100 if dtype == np.float16 else 10)


@pytest.mark.parametrize("base,spread", [(1e4, 1e-2), (-1e6, 1.0), (1.0, 1e-3), (0.0, 100.0)])
def test_layer_norm_keeps_small_spreads_about_large_means(base, spread):
    # float32 statistics in float lanes: deviations from a first estimate of
    # the mean, corrected by their own sum, and the output as (x - estimate) -
    # rest; subtracting the mean rounded to float would lose the spread.
    rng = np.random.default_rng(9)
    for m in (5, 1000, 2500):
        x = (base + spread * rng.standard_normal((3, m))).astype(np.float32)
        got = np.from_dlpack(tessera.layer_norm(to_t(x), [m])).astype(np.float64)
        np.testing.assert_allclose(got, ref_layer_norm(x, 1, None, None, 1e-5), rtol=0, atol=5e-6)


def test_layer_norm_bfloat16_and_errors():
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    t, xr = as_bf16(x)
    close(tessera.layer_norm(t, [6]), ref_layer_norm(xr, 1, None, None, 1e-5), "bfloat16")
    with pytest.raises(ValueError, match=r"layer_norm: expected input with shape \[\*, 4\]"):
        tessera.layer_norm(to_t(x), [4])
    with pytest.raises(ValueError, match=r"layer_norm: expected weight of shape \[6\]"):
        tessera.layer_norm(to_t(x), [6], to_t(np.ones(5, np.float32)))
    with pytest.raises(TypeError, match="layer_norm: expected a floating input"):
        tessera.layer_norm(to_t(np.ones((2, 3), np.int64)), [3])


def ref_layer_norm_grads(x, k, w, g, eps):
    """layer_norm's gradients for upstream g, by the textbook formula in float64."""
    x, g = np.asarray(x, np.float64), np.asarray(g, np.float64)
    axes = tuple(range(x.ndim - k, x.ndim))
    lead = tuple(range(x.ndim - k))
    xc = x - x.mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt((xc * xc).mean(axis=axes, keepdims=True) + eps)
    xhat = xc * rstd
    gh = g if w is None else g * np.asarray(w, np.float64)
    gx = rstd * (gh - gh.mean(axis=axes, keepdims=True) - xhat * (gh * xhat).mean(axis=axes, keepdims=True))
    return gx, (g * xhat).sum(axis=lead), g.sum(axis=lead)


def layer_norm_grads(x, ns, w, b, g, eps, create_graph=False, want=(True, True, True)):
    leaves = [t.requires_grad_(r) if t is not None else None for t, r in zip((x, w, b), want)]
    y = tessera.layer_norm(leaves[0], ns, leaves[1], leaves[2], eps)
    needed = [t for t in leaves if t is not None and t.requires_grad]
    return tessera.autograd.grad([y], needed, [g], create_graph=create_graph)


# Shapes around the CPU kernel's blocking: fewer rows than its 16 blocks, rows
# that do not divide evenly, rows longer than one vector, normalized shapes of
# one and two dims, and a row of one element.
LN_BACKWARD_CASES = [((4, 5, 6), [5, 6]), ((37, 19), [19]), ((3, 1100), [1100]), ((2, 3, 33), [33]), ((5, 1), [1]),
                     ((16, 64), [64]), ((0, 7), [7])]


@pytest.mark.parametrize("shape,ns", LN_BACKWARD_CASES)
@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_layer_norm_backward_against_numpy(shape, ns, affine):
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    x = rng.standard_normal(shape)
    g = rng.standard_normal(shape)
    w = rng.standard_normal(ns) if affine != "none" else None
    b = rng.standard_normal(ns) if affine == "both" else None
    k = len(ns)
    gx, gw, gb = ref_layer_norm_grads(x, k, w, g, 1e-5)
    for dtype, tol in [(np.float64, 1e-10), (np.float32, 2e-4), (np.float16, 3e-2)]:
        grads = layer_norm_grads(to_t(x.astype(dtype)), ns, None if w is None else to_t(w.astype(dtype)),
                                 None if b is None else to_t(b.astype(dtype)), to_t(g.astype(dtype)), 1e-5)
        # Inputs rounded to the dtype: compare with the reference of the rounded values.
        xr, gr = x.astype(dtype).astype(np.float64), g.astype(dtype).astype(np.float64)
        wr = None if w is None else w.astype(dtype).astype(np.float64)
        rx, rw, rb = ref_layer_norm_grads(xr, k, wr, gr, 1e-5)
        scale = max(1.0, float(np.abs(rx).max(initial=0)))
        np.testing.assert_allclose(to_np(grads[0]), rx, rtol=tol, atol=tol * scale, err_msg=str(dtype))
        if w is not None:
            np.testing.assert_allclose(to_np(grads[1]), rw, rtol=tol, atol=tol * max(1.0, shape[0]), err_msg=str(dtype))
        if b is not None:
            np.testing.assert_allclose(to_np(grads[2]), rb, rtol=tol, atol=tol * max(1.0, shape[0]), err_msg=str(dtype))
    del gx, gw, gb


@pytest.mark.parametrize("want", [(True, False, False), (False, True, False), (False, False, True), (True, True, False)])
def test_layer_norm_backward_fused_matches_the_composed_formula(want):
    """Without create_graph one _layer_norm_backward kernel runs; with it, the
    differentiable composition. Both give the same gradients, for any subset of
    the inputs that require grad."""
    rng = np.random.default_rng(7)
    x, g = rng.standard_normal((37, 24)), rng.standard_normal((37, 24))
    w, b = rng.standard_normal(24), rng.standard_normal(24)

    def run(create_graph):
        return layer_norm_grads(to_t(x), [24], to_t(w), to_t(b), to_t(g), 1e-3, create_graph, want)

    fused, composed = run(False), run(True)
    assert len(fused) == len(composed) == sum(want)
    for a, c in zip(fused, composed):
        np.testing.assert_allclose(to_np(a), to_np(c), rtol=1e-11, atol=1e-11)


def test_layer_norm_backward_by_name_masks_and_errors():
    rng = np.random.default_rng(3)
    x, g, w = rng.standard_normal((6, 5)), rng.standard_normal((6, 5)), rng.standard_normal(5)
    op = tessera.ops._layer_norm_backward
    gx, gw, gb = op(to_t(g), to_t(x), [5], to_t(w), 1e-5, True, True)
    rx, rw, rb = ref_layer_norm_grads(x, 1, w, g, 1e-5)
    for got, want in [(gx, rx), (gw, rw), (gb, rb)]:
        np.testing.assert_allclose(to_np(got), want, rtol=1e-10, atol=1e-10)
    # An output not asked for has shape [0].
    gx, gw, gb = op(to_t(g), to_t(x), [5], None, 1e-5, False, True)
    assert tuple(gx.shape) == (0,) and tuple(gw.shape) == (5,) and tuple(gb.shape) == (5,)
    gx, gw, gb = op(to_t(g), to_t(x), [5], None, 1e-5, True, False)
    assert tuple(gx.shape) == (6, 5) and tuple(gw.shape) == (0,) and tuple(gb.shape) == (0,)
    # No rows: the affine gradients are zeros.
    _, gw, gb = op(to_t(np.zeros((0, 5))), to_t(np.zeros((0, 5))), [5], None, 1e-5, True, True)
    assert to_np(gw).tolist() == [0.0] * 5 and to_np(gb).tolist() == [0.0] * 5
    with pytest.raises(ValueError, match=r"_layer_norm_backward: expected grad_output of the input's shape"):
        op(to_t(g[:3]), to_t(x), [5], None, 1e-5, True, True)
    with pytest.raises(ValueError, match=r"_layer_norm_backward: expected input with shape \[\*, 4\]"):
        op(to_t(g), to_t(x), [4], None, 1e-5, True, True)
    with pytest.raises(ValueError, match=r"_layer_norm_backward: expected weight of shape \[5\]"):
        op(to_t(g), to_t(x), [5], to_t(w[:4]), 1e-5, True, True)
    with pytest.raises(TypeError, match="_layer_norm_backward: expected a floating input"):
        op(to_t(g), to_t(np.ones((6, 5), np.int64)), [5], None, 1e-5, True, True)
    # It has no derivative: a backward through a direct call says so.
    xt = to_t(x).requires_grad_()
    out = op(to_t(g), xt, [5], None, 1e-5, True, False)[0]
    with pytest.raises(NotImplementedError, match="_layer_norm_backward: has no derivative"):
        out.sum().backward()


# ---------------------------------------------------------------------------
# losses
# ---------------------------------------------------------------------------

@SETTINGS
@given(st.sampled_from(FLOATS), st.sampled_from(["none", "mean", "sum"]),
       hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=0, max_side=4), st.data())
def test_mse_loss(dtype, reduction, shapes, data):
    x = data.draw(strided(dtype, shapes.input_shapes[0]))
    y = data.draw(strided(dtype, shapes.input_shapes[1]))
    got = tessera.mse_loss(to_t(x), to_t(y), reduction=reduction)
    d = (x.astype(np.float64) - y.astype(np.float64)) ** 2
    want = d if reduction == "none" else (d.sum() if reduction == "sum" else (d.mean() if d.size else np.nan))
    if dtype == np.float16:
        want = np.asarray(want).astype(np.float16)  # inputs are rounded to float16 too
    rtol = 5e-3 if dtype == np.float16 else 1e-5
    out = to_np(got)
    assert out.shape == np.shape(want)
    np.testing.assert_allclose(out, np.asarray(want, np.float64), rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_mse_loss_squares_in_place_and_leaves_its_inputs_alone(reduction):
    # The difference is squared in place (mse_loss's pieces run below autograd): the inputs stay
    # untouched, with and without autograd, the same bits both ways, and the gradient is right.
    rng = np.random.default_rng(4)
    a = rng.standard_normal((300, 77)).astype(np.float32)
    b = rng.standard_normal(77).astype(np.float32)  # broadcast
    x, y = to_t(a.copy()), to_t(b.copy())
    plain = to_np(tessera.mse_loss(x, y, reduction=reduction))
    assert np.array_equal(to_np(x), a) and np.array_equal(to_np(y), b)
    xg = to_t(a.copy()).requires_grad_()
    recorded = tessera.mse_loss(xg, y, reduction=reduction)
    assert np.array_equal(plain, to_np(recorded.detach()))
    recorded.sum().backward()
    n = 1 if reduction != "mean" else a.size
    np.testing.assert_allclose(to_np(xg.grad), 2 * (a - b) / n, rtol=1e-6, atol=1e-7)
    with tessera.no_grad():
        assert np.array_equal(to_np(tessera.mse_loss(xg, y, reduction=reduction)), plain)
    assert np.array_equal(to_np(xg.detach()), a)


@st.composite
def nll_case(draw):
    dtype = draw(st.sampled_from(FLOATS))
    C = draw(st.integers(1, 5))
    layout = draw(st.sampled_from(["unbatched", "batched", "spatial"]))
    if layout == "unbatched":
        shape, tshape = (C,), ()
    elif layout == "batched":
        n = draw(st.integers(0, 5))
        shape, tshape = (n, C), (n,)
    else:
        n, d1, d2 = draw(st.integers(0, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
        shape, tshape = (n, C, d1, d2), (n, d1, d2)
    x = draw(strided(dtype, shape))
    ignore = draw(st.sampled_from([-100, 0, 1]))
    target = draw(hnp.arrays(np.int64, tshape, elements=st.integers(0, C - 1) | st.just(ignore)))
    weight = draw(hnp.arrays(dtype, (C,), elements=st.floats(0.125, 2, width=np.dtype(dtype).itemsize * 8))) \
        if draw(st.booleans()) else None
    return dtype, x, target, weight, ignore


def loss_close(got, want, dtype, scale):
    rtol = {np.dtype(np.float16): 5e-3, np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-10}[np.dtype(dtype)]
    out = to_np(got)
    want = np.asarray(want, dtype=np.float64)
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=rtol, atol=rtol * scale)


@SETTINGS
@given(nll_case(), st.sampled_from(["none", "mean", "sum"]))
def test_nll_loss(case, reduction):
    dtype, x, target, weight, ignore = case
    got = tessera.nll_loss(to_t(x), to_t(target), None if weight is None else to_t(weight), ignore_index=ignore,
                           reduction=reduction)
    assert got.dtype == getattr(tessera, np.dtype(dtype).name)
    loss_close(got, ref_nll(x, target, weight, ignore, reduction), dtype, scale=200 * max(1, target.size))


@SETTINGS
@given(nll_case(), st.sampled_from(["none", "mean", "sum"]), st.sampled_from([0.0, 0.1, 0.5]))
def test_cross_entropy_class_indices(case, reduction, smoothing):
    dtype, x, target, weight, ignore = case
    got = tessera.cross_entropy(to_t(x), to_t(target), None if weight is None else to_t(weight), ignore_index=ignore,
                                reduction=reduction, label_smoothing=smoothing)
    cdim = 0 if x.ndim == 1 else 1
    logp = ref_softmax(x, cdim, log=True) if x.size else x.astype(np.float64)
    want = ref_nll(logp, target, weight, ignore, reduction, smoothing)
    loss_close(got, want, dtype, scale=400 * max(1, target.size))


@SETTINGS
@given(st.sampled_from(FLOATS), st.sampled_from(["none", "mean", "sum"]), st.sampled_from([0.0, 0.2]), st.data())
def test_cross_entropy_class_probabilities(dtype, reduction, smoothing, data):
    shape = data.draw(st.sampled_from([(4,), (3, 4), (2, 3, 2, 2)]))
    x = data.draw(strided(dtype, shape))
    p = data.draw(hnp.arrays(dtype, shape, elements=st.floats(0, 1, width=np.dtype(dtype).itemsize * 8)))
    weight = np.linspace(0.5, 1.5, shape[0] if len(shape) == 1 else shape[1]).astype(dtype) \
        if data.draw(st.booleans()) else None
    got = tessera.cross_entropy(to_t(x), to_t(p), None if weight is None else to_t(weight), reduction=reduction,
                                label_smoothing=smoothing)
    cdim = 0 if len(shape) == 1 else 1
    C = shape[cdim]
    logp = ref_softmax(x, cdim, log=True)
    t = p.astype(np.float64) * (1 - smoothing) + smoothing / C
    wv = 1.0 if weight is None else weight.astype(np.float64).reshape((C,) + (1,) * (len(shape) - cdim - 1))
    loss = -(logp * t * wv).sum(axis=cdim)
    want = loss if reduction == "none" else (loss.sum() if reduction == "sum" else loss.sum() / (x.size / C))
    loss_close(got, want, dtype, scale=1000)


def test_loss_errors():
    x = to_t(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="nll_loss: reduction must be 'none', 'mean' or 'sum', got 'avg'"):
        tessera.nll_loss(x, to_t(np.zeros(3, np.int64)), reduction="avg")
    with pytest.raises(ValueError, match="mse_loss: reduction must be"):
        tessera.mse_loss(x, x, reduction="batchmean")
    with pytest.raises(ValueError, match="cross_entropy: reduction must be"):
        tessera.cross_entropy(x, to_t(np.zeros(3, np.int64)), reduction="")
    with pytest.raises(ValueError, match=r"nll_loss: expected target of shape \[3\] .* got target of shape \[4\]"):
        tessera.nll_loss(x, to_t(np.zeros(4, np.int64)))
    with pytest.raises(ValueError, match=r"nll_loss: expected target of shape \[2, 5\]"):
        tessera.nll_loss(to_t(np.zeros((2, 3, 5), np.float32)), to_t(np.zeros((2, 4), np.int64)))
    with pytest.raises(IndexError, match="target 4 is out of bounds for 4 classes"):
        tessera.nll_loss(x, to_t(np.array([0, 4, 1])))
    with pytest.raises(IndexError, match="target -1 is out of bounds"):
        tessera.cross_entropy(x, to_t(np.array([0, -1, 1])))
    with pytest.raises(TypeError, match="nll_loss: expected an integer"):
        tessera.nll_loss(x, to_t(np.zeros(3, np.float32)))
    with pytest.raises(ValueError, match=r"nll_loss: expected weight of shape \[4\]"):
        tessera.nll_loss(x, to_t(np.zeros(3, np.int64)), to_t(np.ones(3, np.float32)))
    with pytest.raises(ValueError, match="cross_entropy: expected a floating target of class probabilities"):
        tessera.cross_entropy(x, to_t(np.zeros((3, 5), np.float32)))
    with pytest.raises(ValueError, match="label_smoothing must be between 0.0 and 1.0"):
        tessera.cross_entropy(x, to_t(np.zeros(3, np.int64)), label_smoothing=1.5)
    with pytest.raises(ValueError, match="mse_loss"):
        tessera.mse_loss(x, to_t(np.zeros((2, 4), np.float32)))
    with pytest.raises(TypeError, match="mse_loss: expected floating"):
        tessera.mse_loss(to_t(np.zeros(3, np.int64)), to_t(np.zeros(3, np.int64)))
    # every target ignored: the weighted mean is 0 / 0
    assert math.isnan(tessera.nll_loss(x, to_t(np.full(3, -100))).item())


# ---------------------------------------------------------------------------
# conv2d
# ---------------------------------------------------------------------------

@st.composite
def conv_case(draw):
    dtype = draw(st.sampled_from(FLOATS))
    groups = draw(st.integers(1, 3))
    cg, og = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    H, W = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    batched = draw(st.booleans())
    shape = ((draw(st.integers(1, 3)),) if batched else ()) + (groups * cg, H, W)
    x = draw(strided(dtype, shape))
    w = draw(strided(dtype, (groups * og, cg, kh, kw)))
    b = draw(strided(dtype, (groups * og,))) if draw(st.booleans()) else None
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 2)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = draw(st.sampled_from(["valid", "same", "ints"]))
    if padding == "same":
        stride = (1, 1)
    elif padding == "ints":
        padding = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    return dtype, x, w, b, stride, padding, dilation, groups


@SETTINGS
@given(conv_case())
def test_conv2d(case):
    dtype, x, w, b, stride, padding, dilation, groups = case
    kh, kw = w.shape[2:]
    H, W = x.shape[-2:]
    ph, pw = (0, 0) if padding == "valid" else ((dilation[0] * (kh - 1) + 1) // 2 * 2, 0) if padding == "same" \
        else (2 * padding[0], 2 * padding[1])
    if padding == "same":
        ph, pw = dilation[0] * (kh - 1), dilation[1] * (kw - 1)
    args = (to_t(x), to_t(w), None if b is None else to_t(b), stride, padding, dilation, groups)
    if H + ph < dilation[0] * (kh - 1) + 1 or W + pw < dilation[1] * (kw - 1) + 1:
        with pytest.raises(ValueError, match="conv2d: kernel size .* can't be greater than the padded input size"):
            tessera.conv2d(*args)
        return
    got = tessera.conv2d(*args)
    want = ref_conv2d(x, w, b, stride, padding, dilation, groups)
    if dtype == np.float16:
        want = want.astype(np.float16)  # overflows to inf as the result does
    assert got.dtype == getattr(tessera, np.dtype(dtype).name)
    # As a Python float: a float16 maximum times 50 would overflow to an infinite tolerance.
    terms = float(np.abs(want[np.isfinite(want)]).max(initial=1.0))
    close(got, want, dtype, scale=max(1.0, terms) * (50 if dtype == np.float16 else 1))


def test_conv2d_larger_batch_bfloat16_and_1x1():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 6, 9, 8)).astype(np.float32)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    got = tessera.conv2d(to_t(x), to_t(w), to_t(b), stride=2, padding=1, groups=2)
    close(got, ref_conv2d(x, w, b, (2, 2), (1, 1), (1, 1), 2), np.float32, scale=10)
    w1 = rng.standard_normal((5, 6, 1, 1)).astype(np.float32)
    close(tessera.conv2d(to_t(x), to_t(w1)), ref_conv2d(x, w1, None, (1, 1), (0, 0), (1, 1), 1), np.float32, scale=10)
    xt, xr = as_bf16(x)
    wt, wr = as_bf16(w)
    close(tessera.conv2d(xt, wt, padding="same", groups=2), ref_conv2d(xr, wr, None, (1, 1), "same", (1, 1), 2),
          "bfloat16", scale=20)
    # no input channels: the output is the bias
    close(tessera.conv2d(to_t(np.zeros((2, 0, 3, 3), np.float32)), to_t(np.zeros((2, 0, 2, 2), np.float32)),
                         to_t(np.array([1.0, 2.0], np.float32))),
          np.broadcast_to(np.array([1.0, 2.0])[None, :, None, None], (2, 2, 2, 2)), np.float32)


def test_conv2d_errors():
    x = to_t(np.zeros((1, 4, 5, 5), np.float32))
    w = to_t(np.zeros((2, 4, 3, 3), np.float32))
    with pytest.raises(ValueError, match=r"conv2d: expected a 3-D \(unbatched\) or 4-D"):
        tessera.conv2d(to_t(np.zeros((5, 5), np.float32)), w)
    with pytest.raises(ValueError, match="conv2d: expected a 4-D weight"):
        tessera.conv2d(x, to_t(np.zeros((2, 4, 3), np.float32)))
    with pytest.raises(ValueError, match="to have 6 channels .* but got 4 channels"):
        tessera.conv2d(x, to_t(np.zeros((2, 3, 3, 3), np.float32)), groups=2)
    with pytest.raises(ValueError, match=r"in_channels \(4, .*\) must be divisible by groups \(3\)"):
        tessera.conv2d(x, to_t(np.zeros((3, 1, 3, 3), np.float32)), groups=3)
    with pytest.raises(ValueError, match=r"out_channels \(3, .*\) must be divisible by groups \(2\)"):
        tessera.conv2d(x, to_t(np.zeros((3, 2, 3, 3), np.float32)), groups=2)
    with pytest.raises(ValueError, match="groups must be positive"):
        tessera.conv2d(x, w, groups=0)
    with pytest.raises(ValueError, match="kernel size .* can't be greater than the padded input size"):
        tessera.conv2d(x, to_t(np.zeros((2, 4, 7, 7), np.float32)), padding=0)
    with pytest.raises(ValueError, match="conv2d: stride must be positive"):
        tessera.conv2d(x, w, stride=0)
    with pytest.raises(ValueError, match="conv2d: stride must be positive"):
        tessera.conv2d(x, w, stride=(1, -1))
    with pytest.raises(ValueError, match="conv2d: dilation must be positive"):
        tessera.conv2d(x, w, dilation=0)
    with pytest.raises(ValueError, match="conv2d: padding must be non-negative"):
        tessera.conv2d(x, w, padding=-1)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        tessera.conv2d(x, w, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding must be an int, a pair of ints, 'valid' or 'same', got 'full'"):
        tessera.conv2d(x, w, padding="full")
    with pytest.raises(ValueError, match=r"expected bias of shape \[2\]"):
        tessera.conv2d(x, w, to_t(np.zeros(3, np.float32)))
    with pytest.raises(TypeError, match=r"conv2d: input \(float32\) and weight \(float64\) must have the same dtype"):
        tessera.conv2d(x, to_t(np.zeros((2, 4, 3, 3))))
    with pytest.raises(TypeError, match="conv2d: expected a floating input"):
        tessera.conv2d(to_t(np.zeros((1, 4, 5, 5), np.int64)), to_t(np.zeros((2, 4, 3, 3), np.int64)))


# ---------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------

@st.composite
def pool_case(draw, dtypes):
    dtype = draw(st.sampled_from(dtypes))
    lead = draw(st.sampled_from([(), (2,), (1, 3), (2, 2)]))
    lead = lead if len(lead) != 0 else (draw(st.integers(1, 3)),)
    H, W = draw(st.integers(1, 7)), draw(st.integers(1, 7))
    x = draw(strided(dtype, lead + (H, W)))
    k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    s = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    p = (draw(st.integers(0, k[0] // 2)), draw(st.integers(0, k[1] // 2)))
    d = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    return dtype, x, k, s, p, d, draw(st.booleans()), draw(st.booleans())


@SETTINGS
@given(pool_case(FLOATS + [np.int32, np.int64, np.uint8, np.int8, np.int16]))
def test_max_pool2d(case):
    dtype, x, k, s, p, d, ceil, default_stride = case
    if default_stride:
        s = k
    H, W = x.shape[-2:]
    Ho, Wo = pool_out(H, k[0], s[0], p[0], d[0], ceil), pool_out(W, k[1], s[1], p[1], d[1], ceil)
    kwargs = dict(padding=p, dilation=d, ceil_mode=ceil) if default_stride else dict(stride=s, padding=p, dilation=d,
                                                                                     ceil_mode=ceil)
    if Ho <= 0 or Wo <= 0:
        with pytest.raises(ValueError, match="max_pool2d: output size is too small"):
            tessera.max_pool2d(to_t(x), k, **kwargs)
        return
    got = tessera.max_pool2d(to_t(x), k, **kwargs)
    want = ref_max_pool(x, k, s, p, d, ceil)
    assert got.dtype == getattr(tessera, np.dtype(dtype).name)
    if np.dtype(dtype).kind == "f":
        close(got, want, dtype)
    else:  # a window entirely in the padding holds the dtype's lowest value (-inf for floats)
        want = np.where(np.isneginf(want), np.iinfo(dtype).min, want)
        assert to_np(got).tolist() == want.tolist()


@SETTINGS
@given(pool_case(FLOATS), st.sampled_from([None, 1, 3]))
def test_avg_pool2d(case, divisor):
    dtype, x, k, s, p, _, ceil, include_pad = case
    H, W = x.shape[-2:]
    Ho, Wo = pool_out(H, k[0], s[0], p[0], 1, ceil), pool_out(W, k[1], s[1], p[1], 1, ceil)
    if Ho <= 0 or Wo <= 0:
        with pytest.raises(ValueError, match="avg_pool2d: output size is too small"):
            tessera.avg_pool2d(to_t(x), k, s, p)
        return
    got = tessera.avg_pool2d(to_t(x), k, s, p, ceil_mode=ceil, count_include_pad=include_pad,
                             divisor_override=divisor)
    want = ref_avg_pool(x, k, s, p, ceil, include_pad, divisor)
    close(got, want, dtype, scale=100 if dtype == np.float16 else 10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("k,s,p", [((2, 2), (2, 2), (0, 0)), ((3, 3), (1, 1), (1, 1)), ((3, 2), (2, 3), (1, 1)),
                                   ((1, 5), (1, 4), (0, 2)), ((2, 3), (3, 2), (0, 0))])
@pytest.mark.parametrize("include_pad", [True, False])
def test_avg_pool2d_of_wide_rows(dtype, k, s, p, include_pad):
    # Rows wide enough for the kernel's vectorized interior (eight outputs at
    # a time, then the rest; the edge windows one at a time): against the
    # float64 reference, and bit for bit against the same values laid out
    # with a column stride, which the kernel sums one window at a time.
    rng = np.random.default_rng(sum(k) * 10 + sum(s))
    x = (rng.standard_normal((2, 3, 9, 45)) * 10).astype(dtype)
    x[0, 0, 2, :] = -0.0
    got = tessera.avg_pool2d(to_t(x), k, s, p, count_include_pad=include_pad)
    close(got, ref_avg_pool(x, k, s, p, False, include_pad, None), dtype, scale=100 if dtype == np.float16 else 10)
    wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), dtype)
    wide[..., ::2] = x
    one_at_a_time = tessera.avg_pool2d(to_t(wide)[..., ::2], k, s, p, count_include_pad=include_pad)
    assert to_np(got).tobytes() == to_np(one_at_a_time).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32])
def test_max_pool2d_grid_with_nan_and_inf(dtype):
    """Every combination of kernel, stride, padding, dilation and ceil_mode on
    contiguous inputs of several widths (the CPU kernel reduces windows wholly
    inside the input row by row, and the border windows tap by tap), with NaN
    and infinities planted."""
    rng = np.random.default_rng(11)
    for H, W in [(5, 5), (7, 9), (6, 17), (3, 40)]:
        x = rng.standard_normal((2, 3, H, W)) * 10
        if np.dtype(dtype).kind == "f":
            x.flat[rng.choice(x.size, 3, replace=False)] = [np.nan, np.inf, -np.inf]
        x = x.astype(dtype)
        for k in [(1, 1), (2, 2), (3, 2), (2, 3)]:
            for s in [(1, 1), (2, 2), (3, 1)]:
                for p in [(0, 0), (1, 1), (0, 1)]:
                    for d in [(1, 1), (2, 1)]:
                        for ceil in [False, True]:
                            if p[0] > k[0] // 2 or p[1] > k[1] // 2:
                                continue
                            Ho, Wo = pool_out(H, k[0], s[0], p[0], d[0], ceil), pool_out(W, k[1], s[1], p[1], d[1], ceil)
                            if Ho <= 0 or Wo <= 0:
                                continue
                            got = to_np(tessera.max_pool2d(to_t(x), list(k), list(s), list(p), list(d), ceil))
                            want = ref_max_pool(x, k, s, p, d, ceil)
                            np.testing.assert_array_equal(got, want, err_msg=str((H, W, k, s, p, d, ceil)))


def ref_max_pool_grad(x, g, k, s, p, d, ceil):
    """max_pool2d's input gradient by the scan's rule: each window's gradient
    goes to its first maximum in row-major order, its last NaN when a NaN won,
    or its first tap inside the input when nothing beats that (all -inf)."""
    x, g = np.asarray(x, np.float64), np.asarray(g, np.float64)
    H, W = x.shape[-2:]
    Ho, Wo = pool_out(H, k[0], s[0], p[0], d[0], ceil), pool_out(W, k[1], s[1], p[1], d[1], ceil)
    out = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape[:-2]):
        for oh in range(Ho):
            for ow in range(Wo):
                best, m = None, None
                for i in range(k[0]):
                    ih = oh * s[0] - p[0] + i * d[0]
                    for j in range(k[1]):
                        iw = ow * s[1] - p[1] + j * d[1]
                        if not (0 <= ih < H and 0 <= iw < W):
                            continue
                        v = x[idx + (ih, iw)]
                        if best is None or v > m or np.isnan(v):
                            best, m = (ih, iw), v
                if best is not None:
                    out[idx + best] += g[idx + (oh, ow)]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_max_pool2d_backward_grid_against_numpy(dtype):
    """The fused _max_pool2d_backward (no create_graph) and the composed
    backward (create_graph=True) both give the scan rule's gradient, with ties,
    NaN and -inf windows, overlapping windows, padding, dilation and ceil_mode;
    widths around the CPU kernel's 8-window blocks."""
    rng = np.random.default_rng(5)
    for H, W in [(4, 4), (6, 19), (5, 34), (9, 16)]:
        x = rng.integers(-3, 3, (2, 2, H, W)).astype(np.float64)  # ties
        x.flat[rng.choice(x.size, 3, replace=False)] = [np.nan, -np.inf, np.inf]
        x[1, 1, :2, :2] = -np.inf  # an all -inf window
        x = x.astype(dtype).astype(np.float64)
        for k, s, p, d, ceil in [((2, 2), (2, 2), (0, 0), (1, 1), False), ((2, 2), (2, 2), (1, 1), (1, 1), True),
                                 ((3, 3), (2, 2), (1, 1), (1, 1), False), ((3, 2), (1, 1), (0, 1), (2, 1), False),
                                 ((2, 3), (3, 2), (1, 0), (1, 2), True)]:
            Ho, Wo = pool_out(H, k[0], s[0], p[0], d[0], ceil), pool_out(W, k[1], s[1], p[1], d[1], ceil)
            if Ho <= 0 or Wo <= 0:
                continue
            g = rng.standard_normal(x.shape[:-2] + (Ho, Wo)).astype(dtype).astype(np.float64)
            want = ref_max_pool_grad(x, g, k, s, p, d, ceil)
            for create_graph in [False, True]:
                xt = to_t(x.astype(dtype)).requires_grad_()
                y = tessera.max_pool2d(xt, list(k), list(s), list(p), list(d), ceil)
                (got,) = tessera.autograd.grad([y], [xt], [to_t(g.astype(dtype))], create_graph=create_graph)
                tol = 2e-3 if dtype == np.float16 else 1e-6
                np.testing.assert_allclose(to_np(got), want, rtol=tol, atol=tol,
                                           err_msg=str((H, W, k, s, p, d, ceil, create_graph)))


def test_max_pool2d_backward_by_name_and_errors():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 6, 6))
    g = rng.standard_normal((3, 3, 3))
    op = tessera.ops._max_pool2d_backward
    got = op(to_t(g), to_t(x), [2, 2])  # stride defaults to the kernel size
    np.testing.assert_allclose(to_np(got), ref_max_pool_grad(x, g, (2, 2), (2, 2), (0, 0), (1, 1), False))
    with pytest.raises(ValueError, match=r"_max_pool2d_backward: expected grad_output of the pooled shape \[3, 3, 3\]"):
        op(to_t(g[:, :2]), to_t(x), [2, 2])
    with pytest.raises(TypeError, match="_max_pool2d_backward: expected a floating input"):
        op(to_t(g), to_t(np.ones((3, 6, 6), np.int32)), [2, 2])
    with pytest.raises(ValueError, match="_max_pool2d_backward: padding should be at most half of kernel size"):
        op(to_t(g), to_t(x), [2, 2], [2, 2], [2, 2])
    xt = to_t(x).requires_grad_()
    with pytest.raises(NotImplementedError, match="_max_pool2d_backward: has no derivative"):
        op(to_t(g), xt, [2, 2]).sum().backward()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_conv2d_weight_gradient_fused_and_composed(dtype):
    """conv2d's weight gradient through the fused _conv2d_backward_weight (no
    create_graph) and through the composed im2col + matmul (create_graph=True),
    against a float64 NumPy sum, over strides, paddings (also 'same' with an
    even kernel), dilation, groups, dropped last rows and an unbatched input."""
    from test_conv_onednn import ref_conv2d_grad_weight
    rng = np.random.default_rng(8)
    cases = [((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1), ((2, 4, 9, 8), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2),
             ((1, 2, 10, 9), (3, 2, 3, 3), (3, 3), (0, 0), (1, 1), 1), ((2, 3, 6, 7), (2, 3, 2, 4), (1, 1), "same", (1, 1), 1),
             ((3, 6, 5), (4, 3, 1, 1), (1, 1), (0, 0), (1, 1), 1)]
    for xs, ws, st, pd, dl, groups in cases:
        x = rng.standard_normal(xs).astype(dtype).astype(np.float64)
        w = rng.standard_normal(ws).astype(dtype).astype(np.float64)
        y = tessera.conv2d(to_t(x.astype(dtype)), to_t(w.astype(dtype)), None, list(st), pd, list(dl), groups)
        g = rng.standard_normal(y.shape).astype(dtype).astype(np.float64)
        want = ref_conv2d_grad_weight(x, g, ws, st, pd, dl, groups)
        terms = ref_conv2d_grad_weight(np.abs(x), np.abs(g), ws, st, pd, dl, groups)
        for create_graph in [False, True]:
            wt = to_t(w.astype(dtype)).requires_grad_()
            y = tessera.conv2d(to_t(x.astype(dtype)), wt, None, list(st), pd, list(dl), groups)
            (got,) = tessera.autograd.grad([y], [wt], [to_t(g.astype(dtype))], create_graph=create_graph)
            tol = {np.float16: 2e-3, np.float32: 1e-5, np.float64: 1e-12}[dtype]
            err = np.abs(to_np(got).astype(np.float64) - want)
            assert np.all(err <= tol * terms + tol), (xs, ws, st, pd, dl, groups, create_graph, float(err.max()))


def test_conv2d_backward_weight_by_name_and_errors():
    from test_conv_onednn import ref_conv2d_grad_weight
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 6, 5))
    g = rng.standard_normal((2, 6, 3, 5))
    op = tessera.ops._conv2d_backward_weight
    got = op(to_t(g), to_t(x), [6, 2, 3, 3], [2, 1], [1, 1], [1, 1], 2)
    np.testing.assert_allclose(to_np(got), ref_conv2d_grad_weight(x, g, (6, 2, 3, 3), (2, 1), (1, 1), (1, 1), 2),
                               rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match=r"_conv2d_backward_weight: weight_size must be a list of 4 ints"):
        op(to_t(g), to_t(x), [6, 2, 3])
    with pytest.raises(ValueError, match=r"_conv2d_backward_weight: input of shape \[2, 4, 6, 5\] must have"):
        op(to_t(g), to_t(x), [6, 3, 3, 3])
    with pytest.raises(ValueError, match=r"_conv2d_backward_weight: grad_output of shape \[2, 6, 3, 5\] must have"):
        op(to_t(g), to_t(x), [5, 4, 3, 3])
    with pytest.raises(ValueError, match="_conv2d_backward_weight: expected a 4-D input"):
        op(to_t(g[0]), to_t(x[0]), [6, 4, 3, 3])
    with pytest.raises(TypeError, match="_conv2d_backward_weight: grad_output .float32. and input .float64."):
        op(to_t(g.astype(np.float32)), to_t(x), [6, 4, 3, 3])
    with pytest.raises(ValueError, match="_conv2d_backward_weight: stride must be positive"):
        op(to_t(g), to_t(x), [6, 4, 3, 3], [0, 1])
    xt = to_t(x).requires_grad_()
    with pytest.raises(NotImplementedError, match="_conv2d_backward_weight: has no derivative"):
        op(to_t(g), xt, [6, 4, 3, 3]).sum().backward()


def test_pool_known_values_and_bfloat16():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    assert to_np(tessera.max_pool2d(to_t(x), 2)).tolist() == [[[[5, 7], [13, 15]]]]
    assert to_np(tessera.avg_pool2d(to_t(x), 2)).tolist() == [[[[2.5, 4.5], [10.5, 12.5]]]]
    # ceil_mode adds a last, partial window; with padding it counts the pad
    assert to_np(tessera.max_pool2d(to_t(x), 3, 2, ceil_mode=True)).tolist() == [[[[10, 11], [14, 15]]]]
    assert to_np(tessera.avg_pool2d(to_t(x), 2, 2, 1, count_include_pad=False)).tolist() == \
        [[[[0, 1.5, 3], [6, 7.5, 9], [12, 13.5, 15]]]]
    xn = x.copy()
    xn[0, 0, 0, 0] = np.nan
    assert np.isnan(to_np(tessera.max_pool2d(to_t(xn), 2))[0, 0, 0, 0])
    t, xr = as_bf16(np.random.default_rng(3).standard_normal((2, 5, 6)))
    close(tessera.max_pool2d(t, 2, 1, 1), ref_max_pool(xr, (2, 2), (1, 1), (1, 1), (1, 1), False), "bfloat16")
    close(tessera.avg_pool2d(t, 3, 2, 1), ref_avg_pool(xr, (3, 3), (2, 2), (1, 1), False, True, None), "bfloat16")


def test_pool_errors():
    x = to_t(np.zeros((1, 1, 4, 4), np.float32))
    for fn in (tessera.max_pool2d, tessera.avg_pool2d):
        name = fn.__name__
        with pytest.raises(ValueError, match=name + ": padding should be at most half of kernel size"):
            fn(x, 3, 1, 2)
        with pytest.raises(ValueError, match=name + ": padding should be at most half of kernel size"):
            fn(x, (2, 4), 1, (2, 1))
        with pytest.raises(ValueError, match=name + ": stride must be positive"):
            fn(x, 2, 0)
        with pytest.raises(ValueError, match=name + ": kernel_size must be positive"):
            fn(x, 0)
        with pytest.raises(ValueError, match=name + r": expected a 3-D \[C, H, W\] or 4-D"):
            fn(to_t(np.zeros((4, 4), np.float32)), 2)
        with pytest.raises(ValueError, match=name + ": output size is too small"):
            fn(x, 5)
        with pytest.raises(ValueError, match=name + ": padding must be non-negative"):
            fn(x, 2, 1, -1)
    with pytest.raises(ValueError, match="max_pool2d: dilation must be positive"):
        tessera.max_pool2d(x, 2, dilation=0)
    with pytest.raises(TypeError, match="avg_pool2d: expected a floating input"):
        tessera.avg_pool2d(to_t(np.zeros((1, 4, 4), np.int32)), 2)
    with pytest.raises(TypeError, match="max_pool2d: not supported for bool tensors"):
        tessera.max_pool2d(to_t(np.zeros((1, 4, 4), np.bool_)), 2)
    with pytest.raises(ValueError, match="avg_pool2d: divisor_override must be non-zero"):
        tessera.avg_pool2d(x, 2, divisor_override=0)
