"""bfloat16 matrix products on both of the CPU plugin's paths: oneDNN's matmul
(the default where the plugin was built with it and oneDNN has an AMX kernel,
or an AVX512-BF16 one on an AMD CPU) and float32 sgemm + rounding
(TESSERA_CPU_ONEDNN=0), plus a run where oneDNN is limited to pre-AMX kernels
(ONEDNN_MAX_CPU_ISA), which the plugin must refuse except on AMD CPUs.
Each path runs in a child process (the plugin reads the switch once) over mm,
bmm, broadcast matmul and addmm: square and odd shapes, vectors, transposed,
stepped, padded, interleaved, broadcast and overlapping operands, zero-size
dims, and the gradients of mm. Results are checked against float64 NumPy on
the same (bfloat16-exact) inputs. DNNL_VERBOSE shows which path ran."""
import os
import subprocess
import sys

import pytest

np = pytest.importorskip("numpy")

HERE = os.path.dirname(os.path.abspath(__file__))


def bf16_exact(x):
    """x rounded to the nearest bfloat16 (ties to even), as float64: Tessera's
    conversion of these values to bfloat16 is then exact."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


def values(seed, shape):
    return bf16_exact(np.random.default_rng(seed).standard_normal(shape))


# Operand layouts (of the last two dims; batched operands keep dense batches
# unless the layout says otherwise). Each is a view Tessera builds in the child.
#   plain: dense rows; t: dense columns (a transposed copy, .t());
#   step: every other column; pad: rows padded (a column slice of a wider matrix);
#   tpad: dense columns, padded; interleave (3-D): the batch between rows and columns;
#   expand: a column vector expanded over the columns (column stride 0);
#   overlap: a Hankel matrix, x[i, j] = base[i + j] (as_strided, strides (1, 1)).
# name: (batch or None for mm, M, K, N, layout of a, layout of b)
MM_CASES = {
    "64^3": (None, 64, 64, 64, "plain", "plain"),
    "512^3": (None, 512, 512, 512, "plain", "plain"),
    "3x5x7": (None, 3, 5, 7, "plain", "plain"),
    "127x129x65": (None, 127, 129, 65, "plain", "plain"),
    "127x65x129": (None, 127, 65, 129, "plain", "plain"),
    "1xK": (None, 1, 300, 200, "plain", "plain"),
    "Kx1": (None, 200, 300, 1, "plain", "plain"),
    "1xKx1": (None, 1, 300, 1, "plain", "plain"),
    "tall_skinny": (None, 256, 512, 10, "plain", "plain"),
    "a_t": (None, 127, 65, 129, "t", "plain"),
    "b_t": (None, 127, 65, 129, "plain", "t"),
    "both_t": (None, 96, 80, 72, "t", "t"),
    "a_step": (None, 64, 96, 48, "step", "plain"),
    "b_pad": (None, 64, 96, 48, "plain", "pad"),
    "a_tpad": (None, 64, 96, 48, "tpad", "plain"),
    "b_step_t": (None, 64, 96, 48, "plain", "tstep"),
    "b_expand": (None, 64, 96, 48, "plain", "expand"),
    "a_overlap": (None, 64, 96, 48, "overlap", "plain"),
    "bmm_4x31x23x17": (4, 31, 23, 17, "plain", "plain"),
    "bmm_16x128^3": (16, 128, 128, 128, "plain", "plain"),
    "bmm_t": (3, 40, 33, 50, "t", "t"),
    "bmm_interleave_a": (4, 31, 23, 17, "interleave", "plain"),
    "bmm_pad_b": (4, 31, 23, 17, "plain", "pad"),
    "bmm_bcast_a": (4, 31, 23, 17, "bcast", "plain"),  # batch stride 0 (expand)
    "bmm_bcast_b": (4, 31, 23, 17, "plain", "bcast"),
}
# Zero-size dims: (batch or None, M, K, N)
EMPTY_CASES = {"M0": (None, 0, 5, 7), "K0": (None, 5, 0, 7), "N0": (None, 5, 7, 0), "batch0": (0, 5, 7, 3),
               "bmm_K0": (3, 4, 0, 6)}
# addmm: (M, K, N, self shape, beta, alpha, layout of a)
ADDMM_CASES = {
    "addmm": (64, 96, 48, (64, 48), 2.0, 0.5, "plain"),
    "addmm_bias": (64, 96, 48, (48,), 1.0, 1.0, "plain"),
    "addmm_t": (127, 65, 129, (127, 129), 1.0, -1.5, "t"),
    "addmm_beta0": (64, 96, 48, (64, 48), 0.0, 1.0, "plain"),
    "addmm_alpha0": (64, 96, 48, (64, 48), 3.0, 0.0, "plain"),
}
# float32 products, which must not change: (batch or None, M, K, N)
F32_CASES = {"f32_mm": (None, 127, 65, 129), "f32_mm_512": (None, 512, 512, 512), "f32_bmm": (4, 31, 23, 17)}
GRAD_SHAPE = (64, 96, 48)  # x [M, K], w [K, N]


def case_arrays(name, batch, m, k, n):
    seed = sorted(list(MM_CASES) + list(ADDMM_CASES) + list(F32_CASES) + list(EMPTY_CASES)).index(name)
    lead = () if batch is None else (batch,)
    a, b = values(2 * seed, lead + (m, k)), values(2 * seed + 1, lead + (k, n))
    return a, b


def logical(name):
    """The case's a and b as the products see them (float64, bfloat16-exact)."""
    batch, m, k, n, la, lb = MM_CASES[name]
    a, b = case_arrays(name, batch, m, k, n)
    if la == "overlap":
        base = values(1000, m + k - 1)
        a = np.lib.stride_tricks.sliding_window_view(base, k)  # a[i, j] = base[i + j]
    if lb == "expand":
        b = np.repeat(b[..., :, :1], n, axis=-1)
    if la == "bcast":
        a = np.broadcast_to(a[:1], a.shape)
    if lb == "bcast":
        b = np.broadcast_to(b[:1], b.shape)
    return a, b


def child_view(tessera, x, layout):
    """A Tessera bfloat16 tensor with x's values, laid out as `layout` says."""
    bf = tessera.bfloat16

    def t(arr):
        return tessera.tensor(np.ascontiguousarray(arr), dtype=bf)

    if layout == "plain":
        return t(x)
    if layout == "t":
        return t(np.swapaxes(x, -1, -2)).transpose(-1, -2)
    if layout == "step":
        big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],))
        big[..., ::2] = x
        return t(big)[..., ::2]
    if layout == "tstep":  # columns stepped in a transposed matrix: neither stride 1
        big = np.zeros(x.shape[:-2] + (x.shape[-1], 2 * x.shape[-2]))
        big[..., ::2] = np.swapaxes(x, -1, -2)
        return t(big)[..., ::2].transpose(-1, -2)
    if layout == "pad":
        big = np.zeros(x.shape[:-1] + (x.shape[-1] + 5,))
        big[..., : x.shape[-1]] = x
        return t(big)[..., : x.shape[-1]]
    if layout == "tpad":
        xt = np.swapaxes(x, -1, -2)
        big = np.zeros(xt.shape[:-1] + (xt.shape[-1] + 3,))
        big[..., : xt.shape[-1]] = xt
        return t(big)[..., : xt.shape[-1]].transpose(-1, -2)
    if layout == "interleave":
        return t(np.transpose(x, (1, 0, 2))).permute(1, 0, 2)
    if layout == "expand":
        return t(x[..., :, :1]).expand(*x.shape)
    if layout == "overlap":
        m, k = x.shape
        base = np.concatenate([x[:, 0], x[-1, 1:]])  # x[i, j] = base[i + j]
        return t(base).as_strided((m, k), (1, 1))
    if layout == "bcast":
        return t(x[:1]).expand(*x.shape)
    raise ValueError(layout)


def to_np(tessera, y):
    return np.from_dlpack(y.to(tessera.float64).contiguous()).copy()


def child(path):
    """Runs every case in this process (the parent sets the environment)."""
    import tessera

    out = {}
    for name, (batch, m, k, n, la, lb) in MM_CASES.items():
        a, b = logical(name)
        ta, tb = child_view(tessera, a, la), child_view(tessera, b, lb)
        if la not in ("plain", "bcast") or lb not in ("plain", "bcast"):
            assert not (ta.is_contiguous() and tb.is_contiguous()), name
        y = tessera.mm(ta, tb) if batch is None else tessera.bmm(ta, tb)
        assert y.dtype == tessera.bfloat16
        out[name] = to_np(tessera, y)
    # torch.matmul's broadcasting: a batch against one matrix, both ways.
    a, b = case_arrays("bmm_4x31x23x17", 4, 31, 23, 17)
    out["matmul_bcast_b"] = to_np(tessera, tessera.matmul(child_view(tessera, a, "plain"),
                                                          child_view(tessera, b[0], "plain")))
    out["matmul_bcast_a"] = to_np(tessera, tessera.matmul(child_view(tessera, a[0], "plain"),
                                                          child_view(tessera, b, "plain")))
    for name, (batch, m, k, n) in EMPTY_CASES.items():
        a, b = case_arrays(name, batch, m, k, n)
        ta, tb = child_view(tessera, a, "plain"), child_view(tessera, b, "plain")
        y = tessera.mm(ta, tb) if batch is None else tessera.bmm(ta, tb)
        out[name] = to_np(tessera, y)
    for name, (m, k, n, self_shape, beta, alpha, la) in ADDMM_CASES.items():
        a, b = case_arrays(name, None, m, k, n)
        s = values(77, self_shape)
        y = tessera.addmm(child_view(tessera, s, "plain"), child_view(tessera, a, la), child_view(tessera, b, "plain"),
                          beta=beta, alpha=alpha)
        assert y.dtype == tessera.bfloat16
        out[name] = to_np(tessera, y)
    for name, (batch, m, k, n) in F32_CASES.items():
        a, b = case_arrays(name, batch, m, k, n)
        ta, tb = tessera.tensor(a, dtype=tessera.float32), tessera.tensor(b, dtype=tessera.float32)
        y = tessera.mm(ta, tb) if batch is None else tessera.bmm(ta, tb)
        out[name] = np.from_dlpack(y.contiguous()).copy()
    # Gradients of mm in bfloat16: x.grad = g @ w^T, w.grad = x^T @ g (the same
    # kernel on transposed views). g is bfloat16-exact, so sum(y * g) passes it
    # back unrounded.
    m, k, n = GRAD_SHAPE
    x, w, g = values(501, (m, k)), values(502, (k, n)), values(503, (m, n))
    tx = tessera.tensor(x, dtype=tessera.bfloat16, requires_grad=True)
    tw = tessera.tensor(w, dtype=tessera.bfloat16, requires_grad=True)
    (tessera.mm(tx, tw) * tessera.tensor(g, dtype=tessera.bfloat16)).sum().backward()
    assert tx.grad.dtype == tessera.bfloat16 and tw.grad.dtype == tessera.bfloat16
    out["grad_x"], out["grad_w"] = to_np(tessera, tx.grad), to_np(tessera, tw.grad)
    np.savez(path, **out)
    with open("/proc/self/maps") as f:
        print("dnnl_loaded=%d" % any("libdnnl" in line for line in f), flush=True)


# mode: the child's environment.
MODES = {
    "onednn": {"TESSERA_CPU_ONEDNN": "1"},
    "off": {"TESSERA_CPU_ONEDNN": "0"},
    # oneDNN without AMX (Cooper Lake's kernels): slower than the float32 path on
    # Intel CPUs, so every product must be refused there, faster on AMD ones
    # (matmul_onednn.cpp), and right either way.
    "no_amx": {"TESSERA_CPU_ONEDNN": "1", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"},
}
_runs = {}


def run_child(tmp_path_factory, mode):
    if mode not in _runs:
        path = tmp_path_factory.mktemp("matmul") / f"mm_{mode}.npz"
        env = dict(os.environ, DNNL_VERBOSE="1", **MODES[mode])
        env.pop("ONEDNN_VERBOSE", None)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, env.get("PYTHONPATH")) if p)
        code = "import sys, test_matmul_onednn as m; m.child(sys.argv[1])"
        proc = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True, text=True,
                              timeout=240)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        _runs[mode] = (dict(np.load(path)), proc.stdout)
    return _runs[mode]


def cpu_info():
    """(vendor_id, flags) from /proc/cpuinfo; ("", set()) where it cannot be read."""
    vendor, flags = "", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("vendor_id") and not vendor:
                    vendor = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return vendor, flags


def expected_kernel(mode):
    """The oneDNN kernel family bfloat16 mm 512^3 must run on in this mode on this CPU, or None
    (the float32 path): AMX where the CPU has it, else AVX512-BF16 on an AMD CPU."""
    vendor, flags = cpu_info()
    if mode == "off":
        return None
    if mode == "onednn" and "amx_bf16" in flags:
        return "amx"
    if vendor == "AuthenticAMD" and "avx512_bf16" in flags:
        return "avx512_core_bf16"
    return None


def f32_on_onednn(mode, log):
    """Whether float32 products run on oneDNN in this child: oneDNN loaded and
    on, a CPU (AMD's or Intel's) with AVX-512 (matmul_onednn.cpp's matmul_f32)."""
    _, flags = cpu_info()
    return mode != "off" and "dnnl_loaded=1" in log and {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags


def check_bf16(got, want, terms, k, name):
    """A bfloat16 product: the float32 sum s is within (k + 1) * 2^-24 * terms
    of the exact one (terms = sum |a||b|, plus |beta self| for addmm), and one
    rounding to bfloat16 (8 significant bits, to nearest) moves it by at most
    2^-8 |s|. Truncating, rounding twice or a wrong element would exceed it."""
    assert got.shape == want.shape, name
    acc = (k + 1) * 2.0**-24 * terms
    bound = 2.0**-8 * np.abs(want) + (1 + 2.0**-8) * acc
    err = np.abs(got - want)
    assert np.all(err <= bound), (name, float(np.max(err - bound)))


@pytest.mark.parametrize("mode", list(MODES))
def test_bfloat16_products(tmp_path_factory, mode):
    got, log = run_child(tmp_path_factory, mode)
    matmuls = [line for line in log.splitlines() if "exec,cpu,matmul" in line]
    ran = [line for line in matmuls if "src_f32" not in line]  # the bfloat16 products
    ran_f32 = [line for line in matmuls if "src_f32" in line]
    kernel = expected_kernel(mode)
    if "dnnl_loaded=1" not in log and mode != "off":
        kernel = None  # the plugin was built without oneDNN: nothing can run on it
    if kernel is None:
        assert not ran, f"{mode}: no product may run on oneDNN; ran:\n" + "\n".join(ran[:5])
    else:
        assert any(kernel in line and "512x512:512x512:512x512" in line for line in ran), \
            f"{mode}: the plugin links oneDNN and this CPU has {kernel}, but bfloat16 mm 512^3 did not run on it"
        allowed = ("amx", "avx512_core_bf16") if cpu_info()[0] == "AuthenticAMD" else ("amx",)
        assert all(any(k in line for k in allowed) for line in ran), f"{mode}: a product ran on another kernel"
        assert any("exec,cpu,reorder" in line for line in log.splitlines()), "padded operands are packed by a reorder"
    if f32_on_onednn(mode, log):
        assert any("512x512:512x512:512x512" in line for line in ran_f32), "float32 mm 512^3 did not run on oneDNN"
        assert all("brg:avx512_core" in line for line in ran_f32), "a float32 product ran on another kernel"
    else:
        assert not ran_f32, f"{mode}: float32 products must stay off oneDNN here; ran:\n" + "\n".join(ran_f32[:5])
    for name, (batch, m, k, n, _, _) in MM_CASES.items():
        a, b = logical(name)
        check_bf16(got[name], a @ b, np.abs(a) @ np.abs(b), k, name)
    a, b = case_arrays("bmm_4x31x23x17", 4, 31, 23, 17)
    check_bf16(got["matmul_bcast_b"], a @ b[0], np.abs(a) @ np.abs(b[0]), 23, "matmul_bcast_b")
    check_bf16(got["matmul_bcast_a"], a[0] @ b, np.abs(a[0]) @ np.abs(b), 23, "matmul_bcast_a")
    for name, (batch, m, k, n) in EMPTY_CASES.items():
        shape = ((batch,) if batch is not None else ()) + (m, n)
        assert got[name].shape == shape and np.all(got[name] == 0), name
    for name, (m, k, n, self_shape, beta, alpha, _) in ADDMM_CASES.items():
        a, b = case_arrays(name, None, m, k, n)
        s = values(77, self_shape)
        want = beta * s + alpha * (a @ b)
        terms = abs(beta) * np.abs(s) + abs(alpha) * (np.abs(a) @ np.abs(b))
        check_bf16(got[name], want, terms, k + 2, name)  # + alpha *, beta *, +
    m, k, n = GRAD_SHAPE
    x, w, g = values(501, (m, k)), values(502, (k, n)), values(503, (m, n))
    check_bf16(got["grad_x"], g @ w.T, np.abs(g) @ np.abs(w.T), n, "grad_x")
    check_bf16(got["grad_w"], x.T @ g, np.abs(x.T) @ np.abs(g), m, "grad_w")


def test_float32_unchanged(tmp_path_factory):
    """float32 takes the same path (OpenBLAS or the small kernel) whether
    oneDNN is on or not, the same bits, except on CPUs with AVX-512, where
    products from 64^3 multiply-adds (one matrix pair) run on oneDNN's
    brg:avx512_core kernel; either way within float32 error of float64."""
    on, log = run_child(tmp_path_factory, "onednn")
    off, _ = run_child(tmp_path_factory, "off")
    for name, (batch, m, k, n) in F32_CASES.items():
        assert on[name].dtype == np.float32
        if not f32_on_onednn("onednn", log):
            np.testing.assert_array_equal(on[name], off[name], err_msg=name)
        a, b = case_arrays(name, batch, m, k, n)
        for got in (on[name], off[name]):
            err = np.abs(got - a @ b)
            assert np.all(err <= (k + 1) * 2.0**-24 * (np.abs(a) @ np.abs(b)) + 1e-30), name
        a, b = case_arrays(name, batch, m, k, n)
        err = np.abs(on[name] - a @ b)
        assert np.all(err <= (k + 1) * 2.0**-24 * (np.abs(a) @ np.abs(b)) + 1e-30), name


def test_tolerance_catches_wrong_rounding():
    """The bound of check_bf16 is tight enough to tell a correctly rounded
    product from a truncated one, or from one with an error of one part in 2^7."""
    a, b = values(11, (64, 200)), values(12, (200, 96))
    want = a @ b
    terms = np.abs(a) @ np.abs(b)
    check_bf16(bf16_exact(want), want, terms, 200, "rounded")
    truncated = (want.astype(np.float32).view(np.uint32) & 0xFFFF0000).view(np.float32).astype(np.float64)
    with pytest.raises(AssertionError):
        check_bf16(truncated, want, terms, 200, "truncated")
    with pytest.raises(AssertionError):
        check_bf16(bf16_exact(want * (1 + 2.0**-7)), want, terms, 200, "scaled")
