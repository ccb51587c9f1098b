"""tessera.cuda and CUDA tensors from Python (issue 17 point 4; docs/cuda.md).

Without a GPU, the API answers that CUDA is unavailable and why, and moving a
tensor there fails with a clear error; the rest skips with the reason. With a
GPU: .cuda()/.to()/.cpu() with non_blocking, factories on the device, streams
and events, and DLPack with kDLCUDA both ways against PyTorch, CuPy and JAX:
zero copy (equal pointers), values, the stream hand-off with a slow kernel on
the producer's stream, and lifetimes after the producer is deleted.
"""
import gc

import pytest

import tessera

np = pytest.importorskip("numpy")

HAS_GPU = tessera.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason=f"no CUDA device: {tessera.cuda.unavailable_reason()}")


def test_availability_is_consistent():
    assert tessera.cuda.is_available() == (tessera.cuda.device_count() > 0)
    reason = tessera.cuda.unavailable_reason()
    assert (reason == "") == HAS_GPU
    if not HAS_GPU:
        assert "CUDA" in reason or "cuda" in reason or "driver" in reason or "device" in reason, reason


@pytest.mark.skipif(HAS_GPU, reason="a GPU is present")
def test_without_a_gpu_moving_a_tensor_there_fails_clearly():
    t = tessera.ones([2])
    with pytest.raises((ValueError, RuntimeError)) as e:
        t.cuda()
    assert "cuda" in str(e.value)
    with pytest.raises((ValueError, RuntimeError)):
        tessera.cuda.synchronize()
    with pytest.raises((ValueError, RuntimeError)):
        tessera.cuda.get_device_name()


def test_device_arguments_are_checked_before_any_device_use():
    with pytest.raises(ValueError, match="expected a cuda device"):
        tessera.cuda.current_stream("cpu")
    with pytest.raises(TypeError):
        tessera.cuda.synchronize(True)
    with pytest.raises(ValueError, match="expected a cuda device"):
        tessera.ones([1]).cuda("cpu")


def test_is_cuda_is_false_on_cpu():
    assert tessera.ones([1]).is_cuda is False


# ---- with a GPU -------------------------------------------------------------------


@gpu
def test_moves_and_factories():
    x = tessera.arange(12, dtype=tessera.float32).view([3, 4])
    g = x.cuda()
    assert g.is_cuda and str(g.device) == "cuda:0"
    assert g.cuda() is g or g.cuda().data_ptr() == g.data_ptr()
    np.testing.assert_array_equal(np.asarray((g * 2).cpu()), np.arange(12, dtype=np.float32).reshape(3, 4) * 2)
    h = x.to("cuda:0", non_blocking=True)
    np.testing.assert_array_equal(np.asarray(h.cpu()), np.asarray(x))
    for factory in (lambda: tessera.zeros([5], device="cuda"), lambda: tessera.ones([5], device=tessera.device("cuda"))):
        assert factory().is_cuda
    r = tessera.randn([7], device="cuda")
    assert r.is_cuda and r.shape == (7,)
    assert "compute capability" in tessera.cuda.get_device_name()


@gpu
def test_streams_and_events():
    s = tessera.cuda.Stream()
    assert isinstance(s, tessera.Stream) and not s.is_default
    with tessera.cuda.stream(s):
        assert tessera.cuda.current_stream() == s
        y = tessera.ones([1024], device="cuda") * 3
    start, end = tessera.cuda.Event(enable_timing=True), tessera.cuda.Event(enable_timing=True)
    start.record(s)
    with tessera.cuda.stream(s):
        for _ in range(10):
            y = y + 1
    end.record(s)
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0
    assert float(y.sum().item()) == 1024 * 13
    tessera.cuda.synchronize()


try:  # PyTorch is only on GPU machines' Pythons (never a build dependency)
    import torch
except ImportError:
    torch = None


def _torch_gpu():
    return torch is not None and torch.cuda.is_available()


@gpu
@pytest.mark.skipif(not HAS_GPU or not _torch_gpu(), reason="needs PyTorch with CUDA")
def test_torch_zero_copy_both_ways_and_values():
    x = tessera.arange(1000, dtype=tessera.float32, device="cuda")
    tx = torch.from_dlpack(x)
    assert tx.is_cuda and tx.data_ptr() == x.data_ptr()
    assert torch.equal(tx.cpu(), torch.arange(1000, dtype=torch.float32))
    ty = torch.linspace(0, 1, 257, device="cuda", dtype=torch.float64)
    y = tessera.from_dlpack(ty)
    assert y.is_cuda and y.data_ptr() == ty.data_ptr()
    np.testing.assert_array_equal(np.asarray(y.cpu()), ty.cpu().numpy())


@gpu
@pytest.mark.skipif(not HAS_GPU or not _torch_gpu(), reason="needs PyTorch with CUDA")
def test_torch_producer_slow_stream_is_waited_for():
    # PyTorch fills a tensor behind a long sleep on its side stream; Tessera imports
    # it with its own current stream, and its first read must see the fill.
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        t = torch.empty(1 << 20, device="cuda")
        torch.cuda._sleep(200_000_000)  # cycles: ~0.1 s
        t.fill_(5.0)
        x = tessera.from_dlpack(t)  # torch's current stream is `side` here: the producer's stream
        total = x.sum()
    assert float(total.item()) == 5.0 * (1 << 20)


@gpu
@pytest.mark.skipif(not HAS_GPU or not _torch_gpu(), reason="needs PyTorch with CUDA")
def test_tessera_producer_slow_stream_is_waited_for_by_torch():
    s = tessera.cuda.Stream()
    with tessera.cuda.stream(s):
        x = tessera.zeros([1 << 22], device="cuda")
        for _ in range(50):  # queued work on Tessera's stream
            x = x + 1
        tx = torch.from_dlpack(x)  # torch passes its current stream; Tessera makes it wait
    assert float(tx.sum().item()) == 50.0 * (1 << 22)


@gpu
@pytest.mark.skipif(not HAS_GPU or not _torch_gpu(), reason="needs PyTorch with CUDA")
def test_lifetimes_after_the_producer_is_deleted():
    x = tessera.full([4096], 2.5, device="cuda")
    tx = torch.from_dlpack(x)
    del x
    gc.collect()
    assert float(tx.sum().item()) == 2.5 * 4096
    ty = torch.full((4096,), 1.5, device="cuda")
    y = tessera.from_dlpack(ty)
    del ty
    gc.collect()
    assert float(y.sum().item()) == 1.5 * 4096


@gpu
def test_cupy_zero_copy_both_ways():
    cupy = pytest.importorskip("cupy")
    x = tessera.arange(64, dtype=tessera.int32, device="cuda")
    cx = cupy.from_dlpack(x)
    assert cx.data.ptr == x.data_ptr()
    assert cupy.asnumpy(cx).tolist() == list(range(64))
    ca = cupy.arange(10, dtype=cupy.float32) * 3
    y = tessera.from_dlpack(ca)
    assert y.data_ptr() == ca.data.ptr
    np.testing.assert_array_equal(np.asarray(y.cpu()), cupy.asnumpy(ca))


@gpu
def test_jax_exchange_both_ways():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX sees no GPU")
    x = tessera.arange(32, dtype=tessera.float32, device="cuda")
    jx = jnp.from_dlpack(x)
    np.testing.assert_array_equal(np.asarray(jx), np.arange(32, dtype=np.float32))
    ja = jnp.arange(16, dtype=jnp.float32) * 2
    y = tessera.from_dlpack(ja)
    assert y.is_cuda
    np.testing.assert_array_equal(np.asarray(y.cpu()), np.arange(16, dtype=np.float32) * 2)


def test_tf32_switch_is_off_by_default_and_sets_the_plugins_variable(monkeypatch):
    import os

    monkeypatch.delenv("TESSERA_CUDA_ALLOW_TF32", raising=False)
    assert tessera.cuda.allow_tf32() is False
    tessera.cuda.set_allow_tf32(True)
    assert os.environ["TESSERA_CUDA_ALLOW_TF32"] == "1" and tessera.cuda.allow_tf32()
    tessera.cuda.set_allow_tf32(False)
    assert "TESSERA_CUDA_ALLOW_TF32" not in os.environ and not tessera.cuda.allow_tf32()
