"""Streams and events from Python (docs/streams.md) on the synchronous cpu and
meta devices; the asynchronous rules are tested on the sim device."""
import threading

import pytest

import tessera


def test_a_synchronous_device_has_only_its_default_stream():
    s = tessera.current_stream("cpu")
    assert s.is_default and s.id == 0
    assert s == tessera.default_stream("cpu") == tessera.Stream.default("cpu")
    assert s.device == tessera.device("cpu")
    assert repr(s) == "Stream(cpu:0, default)"
    assert s.query()
    s.synchronize()
    tessera.synchronize("cpu")
    with pytest.raises(ValueError, match="is synchronous: it has only its default stream"):
        tessera.Stream("cpu")
    with pytest.raises(ValueError, match="unknown device type 'nope'"):
        tessera.Stream("nope")


def test_the_context_manager_sets_and_restores_the_current_stream_per_device():
    meta = tessera.default_stream("meta")
    with tessera.stream(meta) as entered:
        assert entered is meta
        assert tessera.current_stream("meta") == meta
        assert tessera.current_stream("cpu") == tessera.default_stream("cpu")
    with tessera.stream(None) as nothing:
        assert nothing is None
    with pytest.raises(TypeError, match="expects a tessera.Stream or None"):
        tessera.stream("cpu")


def test_current_streams_belong_to_their_thread():
    seen = []
    with tessera.stream(tessera.default_stream("meta")):
        t = threading.Thread(target=lambda: seen.append(tessera.current_stream("meta")))
        t.start()
        t.join()
    assert seen[0].is_default


def test_events_on_cpu_complete_when_recorded_and_time_with_the_host_clock():
    e = tessera.Event()
    assert not e.recorded and e.query()  # never recorded: complete
    with pytest.raises(ValueError, match="pass the stream"):
        e.record()
    start, end = tessera.Event(enable_timing=True), tessera.Event(enable_timing=True)
    s = tessera.current_stream("cpu")
    start.record(s)
    x = tessera.ones(128, 128)
    assert (x @ x).sum().item() == 128.0**3
    end.record(s)
    end.record()  # again: the current stream of the device of its first record
    assert end.query()
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0
    assert start.device == tessera.device("cpu") and start.enable_timing
    with pytest.raises(ValueError, match="enable_timing"):
        tessera.Event().elapsed_time(end)
    with pytest.raises(ValueError, match="belongs to cpu:0"):
        start.record(tessera.default_stream("meta"))
    recorded = s.record_event()
    assert recorded.recorded
    s.wait_event(recorded)
    again = s.record_event(recorded)
    assert again is not None
