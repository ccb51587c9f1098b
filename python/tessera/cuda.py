"""``tessera.cuda``: the CUDA plugin's devices, with PyTorch's ``torch.cuda`` names.

Everything here is a thin layer over the generic device, stream and event API
(docs/streams.md): a CUDA stream is a ``tessera.Stream`` of a ``cuda`` device.
Where the CUDA plugin is not loaded, or loaded with no usable GPU,
``is_available()`` is False and ``unavailable_reason()`` says why; the other
functions then raise the core's error naming the missing device.
There is no process-wide "current device": ``device=None`` means ``cuda:0``.
"""
import os

from tessera import _C

__all__ = [
    "Event",
    "Stream",
    "allow_tf32",
    "set_allow_tf32",
    "current_stream",
    "default_stream",
    "device_count",
    "get_device_name",
    "is_available",
    "stream",
    "synchronize",
    "unavailable_reason",
]


def _summary():
    for t in _C._device_types():
        if t["name"] == "cuda":
            return t
    return None


def _device(device):
    """None -> cuda:0; an int -> cuda:N; a str or tessera.device must name a cuda device."""
    if device is None:
        return _C.device("cuda:0")
    if isinstance(device, bool):
        raise TypeError("tessera.cuda: a device is None, an int, a str or a tessera.device, not a bool")
    if isinstance(device, int):
        return _C.device("cuda", device)
    d = _C.device(device) if isinstance(device, str) else device
    if not isinstance(d, _C.device) or d.type != "cuda":
        raise ValueError(f"tessera.cuda: expected a cuda device, got {d}")
    return d


def is_available():
    """True when the CUDA plugin is loaded and sees at least one GPU."""
    return device_count() > 0


def device_count():
    """Number of CUDA devices (0 without the plugin, a driver or a GPU)."""
    s = _summary()
    return 0 if s is None else int(s["device_count"])


def unavailable_reason():
    """Why there is no CUDA device ("" when there is one)."""
    s = _summary()
    if s is None:
        return "the CUDA plugin (libtessera-cuda.so) is not loaded: it is built only where the CUDA toolkit is found"
    return "" if s["device_count"] > 0 else (s["unavailable_reason"] or "the CUDA plugin reports no device")


def get_device_name(device=None):
    """The plugin's description of a device (name, memory, compute capability, SMs)."""
    d = _device(device)
    s = _summary()
    if s is None or d.index >= len(s["descriptions"]):
        raise RuntimeError(f"tessera.cuda: no {d}: {unavailable_reason() or 'index out of range'}")
    return s["descriptions"][d.index]


def synchronize(device=None):
    """Waits for all work queued on every stream of the device."""
    _C.synchronize(_device(device))


def current_stream(device=None):
    """This thread's current stream of the device."""
    return _C.current_stream(_device(device))


def default_stream(device=None):
    """The device's default stream."""
    return _C.default_stream(_device(device))


class Stream(_C.Stream):
    """A new (non-default) CUDA stream of ``device``."""

    def __init__(self, device=None):
        super().__init__(_device(device))


Event = _C.Event
"""An event (``enable_timing=``); it belongs to the device of the stream it is recorded on."""


def stream(s):
    """``with tessera.cuda.stream(s):`` makes ``s`` current on its device (tessera.stream)."""
    from tessera.streams import stream as _stream

    return _stream(s)


def allow_tf32():
    """Whether float32 mm/bmm/addmm/conv2d may use TF32 tensor cores (off by default)."""
    return os.environ.get("TESSERA_CUDA_ALLOW_TF32") == "1"


def set_allow_tf32(enabled):
    """Opts float32 products in or out of TF32 (10-bit mantissa inputs, float32
    accumulation), as PyTorch's ``torch.backends.cuda.matmul.allow_tf32``. The
    plugin reads TESSERA_CUDA_ALLOW_TF32 at each call; set it between steps,
    not while other threads run ops (the environment is process-wide)."""
    if enabled:
        os.environ["TESSERA_CUDA_ALLOW_TF32"] = "1"
    else:
        os.environ.pop("TESSERA_CUDA_ALLOW_TF32", None)
