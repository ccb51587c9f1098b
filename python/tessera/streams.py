"""``with tessera.stream(s):`` — make a stream current for its device (docs/streams.md)."""
from tessera import _C


class stream:  # noqa: N801  (PyTorch's name: torch.cuda.stream)
    """Context manager: ``s`` is the current stream of its device on this thread
    inside the block; the previous one is restored on exit. ``None`` does nothing."""

    def __init__(self, s):
        if s is not None and not isinstance(s, _C.Stream):
            raise TypeError(f"tessera.stream() expects a tessera.Stream or None, got {type(s).__name__}")
        self._stream = s
        self._previous = None

    def __enter__(self):
        if self._stream is not None:
            self._previous = _C._set_current_stream(self._stream)
        return self._stream

    def __exit__(self, *exc):
        if self._stream is not None:
            _C._set_current_stream(self._previous)
        return False
