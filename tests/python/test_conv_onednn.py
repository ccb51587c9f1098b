"""float32 conv2d on both of the CPU plugin's paths: oneDNN (the default where
the plugin was built with it) and im2col + GEMM (TESSERA_CPU_ONEDNN=0). Each
path runs in a child process (the plugin reads the switch once) over strides,
paddings, dilations, groups, depthwise, bias or none, batch 1 and unbatched,
1x1 kernels and non-contiguous operands; results are checked against a float64
NumPy convolution; the input gradient against the float64 path (never
oneDNN's), the weight gradient (the _conv2d_backward_weight kernel: oneDNN's
backward-weights convolution, or im2col + GEMM) against a float64 NumPy sum over
the unrolled input, for float32 and float64. DNNL_VERBOSE shows which path ran."""
import os
import subprocess
import sys

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("hypothesis")  # test_ops_nn's reference imports it
from test_ops_nn import ref_conv2d  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (input shape, weight shape, bias, stride, padding, dilation, groups, layout)
# layout: how the child lays the input out: "dense", "transposed" (H and W
# swapped in memory), "stepped" (every other channel), "reversed" (negative
# batch stride), or "weight_permuted" (dense input, OIHW weight from an OHWI block).
CASES = {
    "basic": ((2, 3, 9, 8), (4, 3, 3, 3), True, (1, 1), (1, 1), (1, 1), 1, "dense"),
    "stride2_pad0": ((2, 4, 11, 10), (6, 4, 3, 3), False, (2, 2), (0, 0), (1, 1), 1, "dense"),
    "stride21_pad21": ((2, 4, 9, 7), (5, 4, 3, 2), True, (2, 1), (2, 1), (1, 1), 1, "dense"),
    "pad2_k5": ((1, 3, 8, 9), (4, 3, 5, 5), True, (1, 1), (2, 2), (1, 1), 1, "dense"),
    "dilation2": ((2, 3, 12, 12), (4, 3, 3, 3), True, (1, 1), (2, 2), (2, 2), 1, "dense"),
    "dilation_stride": ((2, 5, 13, 11), (3, 5, 3, 3), False, (2, 3), (1, 0), (2, 1), 1, "dense"),
    "groups2": ((2, 6, 9, 9), (4, 3, 3, 3), True, (2, 2), (1, 1), (1, 1), 2, "dense"),
    "depthwise": ((2, 8, 10, 10), (8, 1, 3, 3), True, (1, 1), (1, 1), (1, 1), 8, "dense"),
    "depthwise_x2_stride2": ((2, 4, 10, 9), (8, 1, 3, 3), False, (2, 2), (1, 1), (1, 1), 4, "dense"),
    "batch1": ((1, 16, 8, 8), (16, 16, 3, 3), True, (1, 1), (1, 1), (1, 1), 1, "dense"),
    "unbatched": ((5, 7, 6), (3, 5, 3, 3), True, (1, 1), (1, 1), (1, 1), 1, "dense"),
    "1x1": ((2, 8, 7, 5), (12, 8, 1, 1), True, (1, 1), (0, 0), (1, 1), 1, "dense"),
    "1x1_stride2": ((2, 8, 7, 5), (6, 8, 1, 1), False, (2, 2), (0, 0), (1, 1), 1, "dense"),
    "rows_dropped": ((2, 3, 10, 11), (4, 3, 3, 3), True, (3, 3), (0, 0), (1, 1), 1, "dense"),
    "same_even_kernel": ((2, 3, 7, 8), (4, 3, 4, 2), True, (1, 1), "same", (1, 1), 1, "dense"),
    "valid": ((2, 3, 7, 8), (4, 3, 3, 3), False, (1, 1), "valid", (1, 1), 1, "dense"),
    "blocked_channels": ((2, 32, 10, 10), (48, 32, 3, 3), True, (1, 1), (1, 1), (1, 1), 1, "dense"),
    "bench_64": ((2, 64, 16, 16), (64, 64, 3, 3), True, (1, 1), (1, 1), (1, 1), 1, "dense"),
    "transposed_input": ((2, 4, 9, 7), (5, 4, 3, 3), True, (1, 1), (1, 1), (1, 1), 1, "transposed"),
    "stepped_input": ((2, 6, 8, 8), (4, 3, 3, 3), True, (1, 2), (1, 1), (1, 1), 2, "stepped"),
    "reversed_input": ((3, 4, 6, 7), (5, 4, 3, 3), False, (1, 1), (1, 1), (1, 1), 1, "reversed"),
    "permuted_weight": ((2, 16, 9, 9), (16, 16, 3, 3), True, (2, 2), (1, 1), (1, 1), 1, "weight_permuted"),
    # 16 channels and more: channels-last for oneDNN's brgconv kernels, moved by
    # the plugin's transposing copy; partial 16x16 squares on every edge.
    "channels_last_edges": ((3, 24, 13, 11), (20, 24, 3, 3), True, (1, 1), (1, 1), (1, 1), 1, "dense"),
    "channels_last_stride2": ((2, 32, 20, 18), (32, 32, 3, 3), False, (2, 2), (1, 1), (1, 1), 1, "dense"),
}
# Cases whose input and weight gradients are compared too.
GRAD_CASES = ["basic", "stride2_pad0", "dilation_stride", "groups2", "depthwise_x2_stride2", "same_even_kernel",
              "rows_dropped", "unbatched", "transposed_input", "stepped_input", "1x1_stride2",
              "bench_64", "channels_last_edges", "channels_last_stride2"]


def operands(name):
    """The case's float32 input, weight and bias arrays, laid out as it says."""
    xs, ws, has_bias, _, _, _, _, layout = CASES[name]
    rng = np.random.default_rng(sorted(CASES).index(name))
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32) if has_bias else None
    if layout == "transposed":
        x = np.ascontiguousarray(x.swapaxes(-1, -2)).swapaxes(-1, -2)
    elif layout == "stepped":
        big = np.zeros((xs[0], 2 * xs[1]) + xs[2:], np.float32)
        big[:, ::2] = x
        x = big[:, ::2]
    elif layout == "reversed":
        x = np.ascontiguousarray(x[::-1])[::-1]
    elif layout == "weight_permuted":
        w = np.ascontiguousarray(w.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    return x, w, b


def ref_conv2d_grad_weight(x, g, wshape, stride, padding, dilation, groups):
    """conv2d's weight gradient in float64: gw[o, c, a, b] = sum over n, i, j of
    g[n, o, i, j] * xpad[n, c, i*sh + a*dh, j*sw + b*dw], per group."""
    x = x.astype(np.float64)[None] if x.ndim == 3 else x.astype(np.float64)
    g = g.astype(np.float64)[None] if g.ndim == 3 else g.astype(np.float64)
    O, Cg, kH, kW = wshape
    (sh, sw), (dh, dw) = stride, dilation
    if padding == "same":
        ph, pw = dh * (kH - 1) // 2, dw * (kW - 1) // 2
    elif padding == "valid":
        ph = pw = 0
    else:
        ph, pw = padding
    Ho, Wo = g.shape[2:]
    reach_h, reach_w = (Ho - 1) * sh + (kH - 1) * dh + 1, (Wo - 1) * sw + (kW - 1) * dw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (ph, max(0, reach_h - ph - x.shape[2])), (pw, max(0, reach_w - pw - x.shape[3]))))
    gw = np.zeros(wshape)
    Og = O // groups
    for a in range(kH):
        for b in range(kW):
            patch = xp[:, :, a * dh:a * dh + (Ho - 1) * sh + 1:sh, b * dw:b * dw + (Wo - 1) * sw + 1:sw]
            for gi in range(groups):
                gw[gi * Og:(gi + 1) * Og, :, a, b] = np.einsum(
                    "nokl,nckl->oc", g[:, gi * Og:(gi + 1) * Og], patch[:, gi * Cg:(gi + 1) * Cg])
    return gw


def child(path):
    """Runs every case in this process (the parent sets the environment)."""
    import tessera

    t = tessera.from_dlpack
    out = {}
    for name, (_, _, _, stride, padding, dilation, groups, layout) in CASES.items():
        x, w, b = operands(name)
        if layout != "dense":
            assert not (x.flags.c_contiguous and w.flags.c_contiguous)
        y = tessera.conv2d(t(x), t(w), None if b is None else t(b), stride, padding, dilation, groups)
        out[name] = np.from_dlpack(y.contiguous()).copy()
    for name in GRAD_CASES:
        _, _, _, stride, padding, dilation, groups, _ = CASES[name]
        x, w, b = operands(name)
        g = np.random.default_rng(99).standard_normal(out[name].shape)
        for dtype in (tessera.float32, tessera.float64):
            xt = tessera.tensor(x.astype(np.float64), dtype=dtype, requires_grad=True)
            wt = tessera.tensor(w.astype(np.float64), dtype=dtype, requires_grad=True)
            bt = None if b is None else tessera.tensor(b.astype(np.float64), dtype=dtype)
            y = tessera.conv2d(xt, wt, bt, stride, padding, dilation, groups)
            (y * tessera.tensor(g, dtype=dtype)).sum().backward()
            suffix = "32" if dtype == tessera.float32 else "64"
            out[f"{name}.gx{suffix}"] = np.from_dlpack(xt.grad.to(tessera.float64).contiguous()).copy()
            out[f"{name}.gw{suffix}"] = np.from_dlpack(wt.grad.to(tessera.float64).contiguous()).copy()
        out[f"{name}.g"] = g
    np.savez(path, **out)
    with open("/proc/self/maps") as f:
        print("dnnl_loaded=%d" % any("libdnnl" in line for line in f), flush=True)


def run_child(tmp_path, onednn):
    path = tmp_path / f"conv_{onednn}.npz"
    env = dict(os.environ, TESSERA_CPU_ONEDNN=onednn, DNNL_VERBOSE="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, env.get("PYTHONPATH")) if p)
    code = "import sys, test_conv_onednn as m; m.child(sys.argv[1])"
    proc = subprocess.run([sys.executable, "-c", code, str(path)], env=env, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return dict(np.load(path)), proc.stdout


@pytest.mark.parametrize("onednn", ["1", "0"])
def test_conv2d_float32_paths(tmp_path, onednn):
    got, log = run_child(tmp_path, onednn)
    used_onednn = "exec,cpu,convolution" in log
    if onednn == "0":
        assert not used_onednn, "TESSERA_CPU_ONEDNN=0 must keep conv2d off oneDNN"
    elif "dnnl_loaded=1" in log:
        assert used_onednn, "the plugin links oneDNN but conv2d did not run on it"
        # Where oneDNN's kernel takes channels-last (brgconv on AVX-512), inputs
        # and results of 16 channels and more move by the plugin's transposing
        # copy, never by a oneDNN reorder to or from acdb (NHWC).
        for name in ("bench_64", "channels_last_edges", "channels_last_stride2"):
            for dims in (CASES[name][0], got[name].shape):
                text = ",{},".format("x".join(map(str, dims)))
                slow = [line for line in log.splitlines() if ",reorder," in line and "acdb" in line and text in line]
                assert not slow, (name, slow[:2])
    for name, (_, _, _, stride, padding, dilation, groups, _) in CASES.items():
        x, w, b = operands(name)
        want = ref_conv2d(x, w, b, stride, padding, dilation, groups)
        # float32 rounding grows with the sum of |terms| at each output.
        terms = ref_conv2d(np.abs(x), np.abs(w), None if b is None else np.abs(b), stride, padding, dilation, groups)
        assert got[name].shape == want.shape, name
        err = np.abs(got[name] - want)
        assert np.all(err <= 1e-5 * terms + 1e-6), (name, float(err.max()))
    if onednn == "0":
        assert "backward_weights" not in log
    elif "dnnl_loaded=1" in log:
        assert "backward_weights" in log, "the plugin links oneDNN but conv2d's weight gradient did not run on it"
    for name in GRAD_CASES:
        a, ref = got[f"{name}.gx32"], got[f"{name}.gx64"]
        np.testing.assert_allclose(a, ref, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(ref).max())),
                                   err_msg=f"{name} gx")
        _, ws, _, stride, padding, dilation, groups, _ = CASES[name]
        x, _, _ = operands(name)
        g = got[f"{name}.g"]
        want = ref_conv2d_grad_weight(x, g, ws, stride, padding, dilation, groups)
        terms = ref_conv2d_grad_weight(np.abs(x), np.abs(g), ws, stride, padding, dilation, groups)
        for suffix, tol in (("32", 1e-5), ("64", 1e-12)):
            err = np.abs(got[f"{name}.gw{suffix}"] - want)
            assert np.all(err <= tol * terms + tol), (name, suffix, float(err.max()))
