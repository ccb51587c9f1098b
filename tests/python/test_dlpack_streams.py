"""The DLPack stream hand-off (docs/dlpack.md, the Python array API's
``__dlpack__(stream=...)`` rule): ``Tensor.__dlpack__(stream=...)`` on a
synchronous device (cpu, in this process) and on the asynchronous sim device,
and ``tessera.from_dlpack(x)`` passing Tessera's current stream to a producer.

sim exchanges tensors through DLPack only when TESSERA_SIM asks
(``dlpack_type=12``, kDLExtDev), and the setting is read when the plugin
loads, so the sim scenarios run in a fresh process each.
"""
import os
import subprocess
import sys
import textwrap

import pytest

import tessera


class Recorder:
    """A producer that records the stream argument of each __dlpack__ call and
    exports a Tessera tensor with it (under ``producer_stream`` when given, as a
    producer whose current stream that is)."""

    def __init__(self, t, producer_stream=None):
        self.t = t
        self.producer_stream = producer_stream
        self.streams = []

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.streams.append(stream)
        return self.t.__dlpack__(stream=stream, max_version=max_version)


# ---- synchronous devices: None and -1 only, as before ------------------------------------

def test_synchronous_devices_accept_only_none_and_minus_one():
    t = tessera.arange(3)
    for stream in (0, 1, 2, 5, 2**40, -2, 2**64, True, "x", 1.5):
        with pytest.raises(ValueError, match=r"stream must be None or -1 for device cpu:0, which has no streams"):
            t.__dlpack__(stream=stream)
        with pytest.raises(ValueError, match="stream"):
            t.__dlpack__(stream=stream, max_version=(1, 0))
    for stream in (None, -1):
        assert tessera.from_dlpack(t.__dlpack__(stream=stream, max_version=(1, 0))).tolist() == [0, 1, 2]
        assert tessera.from_dlpack(t.__dlpack__(stream=stream)).tolist() == [0, 1, 2]


def test_importing_from_a_synchronous_device_passes_no_stream():
    rec = Recorder(tessera.arange(4))
    assert tessera.from_dlpack(rec).tolist() == [0, 1, 2, 3]
    assert rec.streams == [None]


# ---- sim: the asynchronous rule ----------------------------------------------------------

PRELUDE = """
import os
import tessera

def slow_stream(latency_us=200000):
    os.environ["TESSERA_SIM_STREAM_LATENCY_US"] = str(latency_us)
    try:
        return tessera.Stream("sim")
    finally:
        del os.environ["TESSERA_SIM_STREAM_LATENCY_US"]

def produced_on(stream, value):
    with tessera.stream(stream):
        x = tessera.ones(256, device="sim")
        x.mul_(value)  # queued behind the stream's latency
    return x

class Recorder:
    def __init__(self, t, producer_stream=None):
        self.t, self.producer_stream, self.streams = t, producer_stream, []

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.streams.append(stream)
        with tessera.stream(self.producer_stream):
            return self.t.__dlpack__(stream=stream, max_version=max_version)

class LegacyRecorder(Recorder):
    def __dlpack__(self, stream=None):  # a pre-1.0 producer: no max_version
        self.streams.append(stream)
        with tessera.stream(self.producer_stream):
            return self.t.__dlpack__(stream=stream)
"""


def run_sim(script):
    env = dict(os.environ)
    for name in ("TESSERA_ALLOC_CONF", "TESSERA_SIM_STREAM_LATENCY_US"):
        env.pop(name, None)
    env["TESSERA_SIM"] = "devices=2,dlpack_type=12"
    here = os.path.dirname(os.path.dirname(os.path.abspath(tessera.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in [here, env.get("PYTHONPATH", "")] if p)
    code = PRELUDE + textwrap.dedent(script) + "\nprint('ok')\n"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def test_from_dlpack_passes_the_current_stream_to_the_producer():
    run_sim("""
        assert tessera.ones(2, device="sim").__dlpack_device__() == (12, 0)
        producer, consumer, other = slow_stream(), tessera.Stream("sim"), tessera.Stream("sim")
        for cls in (Recorder, LegacyRecorder):
            x = produced_on(producer, 3.0)
            rec = cls(x, producer)
            with tessera.stream(consumer):
                y = tessera.from_dlpack(rec)
                # Queued on the consumer's stream after the import: ordered after the
                # producer's mul_ (the sim checker would raise otherwise).
                assert (y + 1).tolist() == [4.0] * 256, cls
            with tessera.stream(other):
                tessera.from_dlpack(rec)
            with tessera.stream(consumer):
                tessera.from_dlpack(rec)
            tessera.from_dlpack(rec)  # the default stream: None
            s_consumer, s_other, s_again, s_default = rec.streams
            assert isinstance(s_consumer, int) and s_consumer > 2, rec.streams
            assert isinstance(s_other, int) and s_other > 2 and s_other != s_consumer, rec.streams
            assert s_again == s_consumer, rec.streams
            assert s_default is None, rec.streams
            # Another device has its own current stream.
            with tessera.stream(tessera.Stream("sim:1")):
                rec1 = Recorder(tessera.ones(3, device="sim"))
                tessera.from_dlpack(rec1)
                assert rec1.streams == [None]
    """)


def test_dlpack_with_the_consumers_stream_orders_it_after_the_producer():
    run_sim("""
        producer, consumer = slow_stream(), tessera.Stream("sim")
        with tessera.stream(consumer):
            value = Recorder(tessera.ones(1, device="sim"))
            tessera.from_dlpack(value)
            value = value.streams[0]
        x = produced_on(producer, 5.0)
        with tessera.stream(producer):
            versioned = x.__dlpack__(stream=value, max_version=(1, 0))
            legacy = x.__dlpack__(stream=value)
        with tessera.stream(consumer):
            assert (tessera.from_dlpack(versioned) * 2).tolist() == [10.0] * 256
            assert (tessera.from_dlpack(legacy) * 2).tolist() == [10.0] * 256
    """)


def test_minus_one_synchronizes_nothing():
    run_sim("""
        producer, consumer = slow_stream(), tessera.Stream("sim")
        with tessera.stream(consumer):
            value = Recorder(tessera.ones(1, device="sim"))
            tessera.from_dlpack(value)
        x = produced_on(producer, 3.0)
        with tessera.stream(producer):
            cap = x.__dlpack__(stream=-1, max_version=(1, 0))
        with tessera.stream(consumer):
            y = tessera.from_dlpack(cap)
            try:
                y + 1
                raise AssertionError("the checker did not flag the unordered read")
            except ValueError as e:
                assert "unsynchronized cross-stream access" in str(e), e
            producer.synchronize()
            assert (y + 1).tolist() == [4.0] * 256
    """)


def test_bad_stream_values_on_sim_are_refused():
    run_sim("""
        x = tessera.ones(4, device="sim")
        for stream, match in ((-2, "stream=-2 is refused for device sim:0"), (2**63, "2**63 - 1"),
                              (-(2**70), "2**63 - 1"), (True, "None or an int"), ("x", "None or an int"),
                              (1.0, "None or an int")):
            for kwargs in ({}, {"max_version": (1, 0)}):
                try:
                    x.__dlpack__(stream=stream, **kwargs)
                    raise AssertionError(f"stream={stream!r} was accepted")
                except ValueError as e:
                    assert match in str(e), e
                    assert "sim:0" in str(e), e
        try:
            x.__dlpack__(stream=-2)
        except ValueError as e:
            assert "plugin 'sim'" in str(e), e
        x.__dlpack__(stream=None)
        x.__dlpack__(stream=-1)
        # With dl_device, the stream is one of the requested device: cpu takes None and -1 only.
        try:
            x.__dlpack__(stream=7, max_version=(1, 0), dl_device=(1, 0))
            raise AssertionError("stream=7 was accepted for a copy to cpu")
        except ValueError as e:
            assert "stream must be None or -1 for device cpu:0" in str(e), e
        assert tessera.from_dlpack(x.__dlpack__(stream=-1, max_version=(1, 0), dl_device=(1, 0))).tolist() == [1.0] * 4
        # ...and a copy from cpu to sim takes sim's values (the copy is ordered before the consumer's stream).
        consumer = tessera.Stream("sim")
        with tessera.stream(consumer):
            rec = Recorder(tessera.ones(1, device="sim"))
            tessera.from_dlpack(rec)
        c = tessera.arange(4, dtype=tessera.float32)
        cap = c.__dlpack__(stream=rec.streams[0], max_version=(1, 0), dl_device=(12, 0))
        with tessera.stream(consumer):
            assert (tessera.from_dlpack(cap) + 1).tolist() == [1.0, 2.0, 3.0, 4.0]
    """)
