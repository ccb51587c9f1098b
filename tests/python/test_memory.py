"""tessera.memory end to end (docs/memory.md): statistics with torch.cuda.memory's
names, the allocator's sizes and pools as PyTorch's CUDA caching allocator has
them, snapshots and their agreement with the statistics, recorded history,
dump files and ``python -m tessera.memory``, out-of-memory errors, settings,
pinned memory, non-blocking copies and record_stream.

Most tests run on the sim device in this process, starting from an idle sim:0
(no live tensor, nothing cached) so that byte counts can be asserted exactly:

* a request is rounded up to a multiple of 512 bytes;
* requests <= 1 MiB come from 2 MiB small-pool segments, larger ones below
  10 MiB from 20 MiB segments, and a request of 10 MiB or more gets a segment of
  its size rounded up to 2 MiB (and keeps all of it when less than 1 MiB over).

What needs a fresh allocator (settings apply to allocators built afterwards), a
small device (TESSERA_SIM=memory_mb=64) or a slow stream runs in a subprocess,
a few scenarios per subprocess.
"""
import collections
import gc
import json
import os
import pickle
import subprocess
import sys
import textwrap

import pytest

import tessera
import tessera.memory as M

KiB = 1 << 10
MiB = 1 << 20

STATS = ["allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes", "active_bytes",
         "inactive_split_bytes", "requested_bytes"]
POOLS = ["all", "small_pool", "large_pool"]
COUNTERS = ["num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free"]

# The exact sizes below are those of the default configuration.
pytestmark = pytest.mark.skipif(bool(os.environ.get("TESSERA_ALLOC_CONF")),
                                reason="the expected sizes are those of the default allocator settings")


def floats(nbytes, device="sim"):
    assert nbytes % 4 == 0
    return tessera.empty([nbytes // 4], device=device)


def stat(key, device="sim"):
    return M.memory_stats(device)[key]


@pytest.fixture
def sim():
    """sim:0 with nothing allocated and nothing cached."""
    gc.collect()
    tessera.synchronize("sim")
    M.empty_cache("sim")
    assert M.memory_allocated("sim") == 0, "a sim tensor is still alive (kept by an earlier failure?)"
    assert M.memory_reserved("sim") == 0
    yield "sim"
    gc.collect()
    tessera.synchronize("sim")
    M.empty_cache("sim")


def run_python(args, **env_updates):
    """`python args...` in a fresh process that imports the tessera under test."""
    env = dict(os.environ)
    for name in ("TESSERA_ALLOC_CONF", "TESSERA_SIM", "TESSERA_SIM_STREAM_LATENCY_US"):
        env.pop(name, None)
    here = os.path.dirname(os.path.dirname(os.path.abspath(tessera.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in [here, env.get("PYTHONPATH", "")] if p)
    env.update(env_updates)
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=120)


def run_script(script, **env_updates):
    """Runs `script` (which prints one JSON object last) in a fresh process; returns that object."""
    r = run_python(["-c", textwrap.dedent(script)], **env_updates)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.splitlines()[-1])


# ---- statistics ------------------------------------------------------------------


def test_allocated_grows_by_the_rounded_size_and_reserved_stays_until_empty_cache(sim):
    t = tessera.ones([3000], device=sim)  # 12000 bytes -> 12288
    assert M.memory_allocated(sim) == 12288
    assert stat("requested_bytes.all.current") == 12000
    assert stat("allocated_bytes.small_pool.current") == 12288
    assert M.memory_reserved(sim) == 2 * MiB  # one small-pool segment
    assert stat("segment.small_pool.current") == 1 and stat("segment.large_pool.current") == 0
    u = tessera.empty([1000], device=sim)  # 4000 -> 4096, from the same segment
    assert M.memory_allocated(sim) == 12288 + 4096
    assert stat("requested_bytes.all.current") == 16000
    assert M.memory_reserved(sim) == 2 * MiB

    huge = floats(11 * MiB + KiB)  # >= 10 MiB: its own segment of 12 MiB, unsplit (less than 1 MiB over)
    assert M.memory_reserved(sim) == 14 * MiB
    assert M.memory_allocated(sim) == 12288 + 4096 + 12 * MiB
    assert stat("requested_bytes.large_pool.current") == 11 * MiB + KiB
    mid = floats(2 * MiB)  # large pool, below 10 MiB: a 20 MiB segment
    assert M.memory_reserved(sim) == 34 * MiB
    mid2 = floats(3 * MiB)  # fits in that segment's rest
    assert M.memory_reserved(sim) == 34 * MiB
    assert stat("segment.large_pool.current") == 2 and stat("segment.all.current") == 3
    assert stat("allocated_bytes.large_pool.current") == 17 * MiB
    assert stat("allocation.all.current") == 5

    assert t.sum().item() == 3000.0
    del t, u, huge, mid, mid2
    tessera.synchronize(sim)
    assert M.memory_allocated(sim) == 0
    assert stat("requested_bytes.all.current") == 0
    assert M.memory_reserved(sim) == 34 * MiB  # cached
    assert stat("segment.all.current") == 3
    M.empty_cache(sim)
    assert M.memory_reserved(sim) == 0
    assert stat("segment.all.current") == 0
    assert M.max_memory_reserved(sim) >= 34 * MiB


def test_empty_cache_keeps_segments_that_hold_live_tensors(sim):
    drop = floats(12 * MiB)  # its own 12 MiB segment, all of it allocated
    keep = floats(4 * MiB)  # a new 20 MiB segment
    del drop
    assert M.memory_reserved(sim) == 32 * MiB
    M.empty_cache(sim)
    assert M.memory_reserved(sim) == 20 * MiB
    assert M.memory_allocated(sim) == 4 * MiB
    del keep


def test_cpu_is_the_default_device():
    before = M.memory_allocated()
    assert before == M.memory_allocated("cpu") == stat("allocated_bytes.all.current", "cpu")
    t = tessera.ones([4096])  # 16 KiB: above the per-thread cache of <= 1 KiB blocks
    assert M.memory_allocated() - before == 16 * KiB
    assert M.memory_stats()["requested_bytes.all.current"] == M.memory_stats("cpu")["requested_bytes.all.current"]
    assert M.max_memory_allocated() >= before + 16 * KiB
    assert M.memory_reserved() >= M.memory_allocated() and M.max_memory_reserved() >= M.memory_reserved()
    assert "cpu:0" in M.memory_summary()
    del t
    assert M.memory_allocated() == before


def test_memory_stats_has_torchs_keys_and_peaks_and_sums_that_follow_the_allocations(sim):
    keys = M.memory_stats(sim)
    assert isinstance(keys, collections.OrderedDict) and list(keys) == sorted(keys)
    expected = {f"{s}.{p}.{m}" for s in STATS for p in POOLS for m in ("current", "peak", "allocated", "freed")}
    expected |= set(COUNTERS)
    assert expected <= set(keys), sorted(expected - set(keys))
    assert keys["max_split_size"] == -1  # no max_split_size_mb set

    M.reset_peak_memory_stats(sim)
    M.reset_accumulated_memory_stats(sim)
    s = M.memory_stats(sim)
    assert all(s[k] == 0 for k in s if k.endswith((".allocated", ".freed")) or k.startswith("num_"))

    a = floats(12 * MiB)  # a 12 MiB segment
    b = tessera.empty([1000], device=sim)  # 4096 bytes in a 2 MiB segment
    s = M.memory_stats(sim)
    assert s["allocation.all.allocated"] == 2 and s["allocation.all.freed"] == 0
    assert s["allocated_bytes.all.allocated"] == 12 * MiB + 4096
    assert s["allocated_bytes.large_pool.allocated"] == 12 * MiB
    assert s["allocated_bytes.small_pool.allocated"] == 4096
    assert s["requested_bytes.all.allocated"] == 12 * MiB + 4000
    assert s["segment.all.allocated"] == 2 and s["reserved_bytes.all.allocated"] == 14 * MiB
    assert s["num_device_alloc"] == 2 and s["num_device_free"] == 0

    del a
    tessera.synchronize(sim)
    M.empty_cache(sim)  # the 12 MiB segment goes back; the small one holds b
    s = M.memory_stats(sim)
    assert s["allocated_bytes.all.current"] == 4096 and s["allocated_bytes.all.peak"] == 12 * MiB + 4096
    assert s["allocated_bytes.all.freed"] == 12 * MiB
    assert s["reserved_bytes.all.current"] == 2 * MiB and s["reserved_bytes.all.peak"] == 14 * MiB
    assert s["reserved_bytes.large_pool.freed"] == 12 * MiB
    assert s["segment.all.freed"] == 1 and s["num_device_free"] == 1
    assert s["active.all.peak"] == 2 and s["active.all.current"] == 1
    for key, value in s.items():
        if key.endswith(".current"):
            assert s[key[:-len("current")] + "peak"] >= value >= 0, key
    assert M.max_memory_allocated(sim) == 12 * MiB + 4096
    assert M.max_memory_reserved(sim) == 14 * MiB

    M.reset_peak_memory_stats(sim)
    s = M.memory_stats(sim)
    for key, value in s.items():
        if key.endswith(".current"):
            assert s[key[:-len("current")] + "peak"] == value, key
    assert M.max_memory_allocated(sim) == 4096 and M.max_memory_reserved(sim) == 2 * MiB

    M.reset_accumulated_memory_stats(sim)
    s = M.memory_stats(sim)
    for key, value in s.items():
        if key.endswith((".allocated", ".freed")) or key.startswith("num_"):
            assert value == 0, key
    assert s["allocated_bytes.all.current"] == 4096 and s["segment.all.current"] == 1  # currents stay
    del b


def test_memory_summary_is_a_table_of_the_devices_statistics(sim):
    t = tessera.ones([3000], device=sim)
    text = M.memory_summary(sim)
    assert "sim:0" in text
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in text.splitlines()
            if line.count("|") >= 3 and line.split("|")[1].strip() in ("Allocated memory", "Reserved memory")}
    assert rows == {"Allocated memory": "12.00 KiB", "Reserved memory": "2.00 MiB"}, text
    del t


# ---- snapshots against the statistics --------------------------------------------


def stats_from_snapshot(segments):
    """The current statistics a list of segments implies (PyTorch's
    _check_memory_stat_consistency): blocks summed by state, segments counted
    except expandable ones, small/large by segment_type."""
    expected = collections.Counter()
    for seg in segments:
        blocks = seg["blocks"]
        split = len(blocks) > 1
        for pool in ("all", seg["segment_type"] + "_pool"):
            if not seg["is_expandable"]:
                expected[f"segment.{pool}.current"] += 1
            expected[f"reserved_bytes.{pool}.current"] += seg["total_size"]
            for b in blocks:
                if b["state"] == "active_allocated":
                    expected[f"allocation.{pool}.current"] += 1
                    expected[f"allocated_bytes.{pool}.current"] += b["size"]
                    expected[f"requested_bytes.{pool}.current"] += b["requested_size"]
                if b["state"] in ("active_allocated", "active_pending_free"):
                    expected[f"active.{pool}.current"] += 1
                    expected[f"active_bytes.{pool}.current"] += b["size"]
                if b["state"] == "inactive" and split and not seg["is_expandable"]:
                    expected[f"inactive_split.{pool}.current"] += 1
                    expected[f"inactive_split_bytes.{pool}.current"] += b["size"]
    return expected


def check_segments(segments):
    for seg in segments:
        blocks = seg["blocks"]
        assert seg["segment_type"] in ("small", "large")
        assert blocks and blocks[0]["address"] == seg["address"]
        for x, y in zip(blocks, blocks[1:]):
            assert x["address"] + x["size"] == y["address"], "blocks tile the segment in address order"
        assert sum(b["size"] for b in blocks) == seg["total_size"]
        assert all(b["state"] in ("active_allocated", "active_pending_free", "inactive") for b in blocks)
        assert seg["allocated_size"] == sum(b["size"] for b in blocks if b["state"] == "active_allocated")
        assert seg["active_size"] == sum(b["size"] for b in blocks if b["state"] != "inactive")
        assert seg["requested_size"] == sum(b["requested_size"] for b in blocks if b["state"] == "active_allocated")


def assert_consistent(device):
    segments = M.memory_snapshot(device)
    stats = M.memory_stats(device)
    check_segments(segments)
    expected = stats_from_snapshot(segments)
    keys = [f"{s}.{p}.current" for s in STATS for p in POOLS]
    assert {k: stats[k] for k in keys} == {k: expected[k] for k in keys}
    return segments


def test_statistics_rebuilt_from_the_snapshot_equal_memory_stats(sim):
    a = tessera.ones([3000], device=sim)
    b = tessera.ones([1000], device=sim)
    d = floats(11 * MiB + KiB)  # its own 12 MiB segment
    c = floats(2 * MiB)  # a 20 MiB segment ...
    e = floats(3 * MiB)  # ... shared
    del b, c  # cached blocks in split segments: inactive_split
    side = tessera.Stream(sim)
    x = tessera.ones([5000], device=sim)
    side.wait_stream(tessera.current_stream(sim))
    with tessera.stream(side):
        y = x.neg()  # allocated on the side stream: a segment of its own
    x.record_stream(side)
    del x  # pending until the next allocation polls the side stream's event

    segments = assert_consistent(sim)
    states = collections.Counter(b["state"] for s in segments for b in s["blocks"])
    assert states["active_pending_free"] == 1
    assert states["active_allocated"] == 4  # a, d, e, y
    assert stat("inactive_split.all.current") == 4  # after a, after y, and around e
    assert stat("active_bytes.all.current") == stat("allocated_bytes.all.current") + 20480  # x: 20000 -> 20480
    assert sorted(s["total_size"] for s in segments) == [2 * MiB, 2 * MiB, 12 * MiB, 20 * MiB]
    assert len({s["stream"] for s in segments}) == 2

    side.synchronize()
    assert y.sum().item() == -5000.0
    del a, d, e, y
    tessera.synchronize(sim)
    assert_consistent(sim)
    assert_consistent("cpu")


# ---- history, dump files and python -m tessera.memory ----------------------------


@pytest.fixture
def dumped(sim, tmp_path):
    """A recorded history on sim (a 20 MiB segment, one 1200000-byte tensor
    made and freed) dumped as pickle and as JSON."""
    M.record_memory_history(device=sim)
    try:
        t = tessera.empty([300000], device=sim)  # 1200000 bytes -> 1200128, large pool
        addr = t.data_ptr()
        del t
        tessera.synchronize(sim)
        pickled, as_json = tmp_path / "snap.pickle", tmp_path / "snap_json.json"
        M.dump_snapshot(pickled, devices=sim)
        M._dump_snapshot(str(as_json), devices=[sim])
    finally:
        M.record_memory_history(False, device=sim)
    return pickled, as_json, addr


def test_history_and_snapshot_files(dumped):
    pickled, as_json, addr = dumped
    with open(pickled, "rb") as f:
        assert f.read(1) == b"\x80"  # pickle's PROTO
    with open(pickled, "rb") as f:
        p = pickle.load(f)
    with open(as_json) as f:
        j = json.load(f)
    assert M.load_snapshot(pickled) == p and M.load_snapshot(as_json) == j
    assert set(p) == {"segments", "device_traces", "allocator_settings", "devices"}
    assert p["devices"] == [{"device": 0, "name": "sim:0", "allocator_settings": p["allocator_settings"]}]
    # The same state, but the JSON dump came second: its history has one more
    # "snapshot" event (each snapshot records one).
    assert {k: v for k, v in p.items() if k != "device_traces"} == {k: v for k, v in j.items() if k != "device_traces"}
    assert len(p["device_traces"]) == len(j["device_traces"]) == 1
    trace, trace_j = p["device_traces"][0], j["device_traces"][0]
    assert trace_j[:-1] == trace and trace_j[-1]["action"] == "snapshot"

    assert [e["action"] for e in trace] == ["segment_alloc", "alloc", "free_requested", "free_completed", "snapshot"]
    seg, alloc, _, freed, _ = trace
    assert seg["size"] == 20 * MiB and seg["addr"] == addr
    assert alloc["addr"] == freed["addr"] == addr and alloc["size"] == freed["size"] == 1200128
    assert [e["time_us"] for e in trace] == sorted(e["time_us"] for e in trace)
    for e in trace[:4]:
        frames = e["frames"]
        assert isinstance(frames, list) and frames
        assert all(isinstance(f, dict) and set(f) == {"filename", "line", "name"} for f in frames)
        assert any("tessera" in f["filename"] or "tessera" in f["name"] for f in frames)

    (segment,) = p["segments"]  # the freed block's segment, cached
    assert segment["device"] == 0 and segment["total_size"] == 20 * MiB and segment["allocated_size"] == 0
    assert segment["segment_type"] == "large" and segment["is_expandable"] is False
    assert segment["blocks"] == [{"address": addr, "size": 20 * MiB, "requested_size": 0, "state": "inactive",
                                  "frames": []}]
    settings = p["allocator_settings"]
    assert settings["expandable_segments"] is False and settings["max_split_size"] == -1
    assert settings["backend"] == "caching"

    text = M.summarize(p)
    assert "sim:0" in text and "history:          5 events" in text
    assert "alloc 1, free_completed 1, free_requested 1, segment_alloc 1, snapshot 1" in text
    assert "allocated +1.14 MiB, reserved +20.00 MiB" in text  # 1200128 B = 1.1445 MiB


def test_record_memory_history_keeps_the_last_max_entries_and_stopping_clears_it(sim):
    M._record_memory_history("all", device=sim, max_entries=3)
    try:
        ts = [tessera.empty([1000], device=sim) for _ in range(4)]  # segment_alloc + 4 allocs
        trace = M.snapshot(sim)["device_traces"][0]
        assert [e["action"] for e in trace] == ["alloc", "alloc", "snapshot"]
        assert [e["addr"] for e in trace[:2]] == [t.data_ptr() for t in ts[2:]]
    finally:
        M.record_memory_history(False, device=sim)
    assert M.snapshot(sim)["device_traces"] == [[]]
    del ts


def test_snapshots_of_several_devices_number_them_by_position(sim):
    s = tessera.ones([3000], device=sim)
    c = tessera.ones([4096])
    snap = M._snapshot(["cpu", tessera.device("sim"), "sim:0"])  # named twice: written once
    assert [(d["device"], d["name"]) for d in snap["devices"]] == [(0, "cpu:0"), (1, "sim:0")]
    for d in snap["devices"]:  # each device's own settings; the top-level ones are the first's
        assert d["allocator_settings"]["TESSERA_ALLOC_CONF"] == snap["allocator_settings"]["TESSERA_ALLOC_CONF"]
    assert len(snap["device_traces"]) == 2
    sim_segments = [seg for seg in snap["segments"] if seg["device"] == 1]
    assert [seg["allocated_size"] for seg in sim_segments] == [12288]
    assert any(b["address"] == c.data_ptr() for seg in snap["segments"] if seg["device"] == 0 for b in seg["blocks"])
    assert M.memory_snapshot(sim) == M.snapshot(sim)["segments"]
    del s, c


def test_the_command_line_prints_the_summary(dumped):
    pickled, as_json, _ = dumped
    for path in (pickled, as_json):
        r = run_python(["-m", "tessera.memory", str(path), "--no-plot"])
        assert r.returncode == 0, r.stdout + r.stderr
        assert "sim:0" in r.stdout and "history:" in r.stdout
        assert "segments:         1 (0 small, 1 large, 0 expandable)" in r.stdout
        assert "cached (free):    20.00 MiB in 1 blocks" in r.stdout
    assert not os.path.exists(os.path.splitext(pickled)[0] + ".png")

    missing = os.path.join(os.path.dirname(pickled), "missing.pickle")
    r = run_python(["-m", "tessera.memory", missing])
    assert r.returncode != 0
    assert missing in r.stderr


def test_the_command_line_draws_the_history(dumped, tmp_path):
    pytest.importorskip("matplotlib")
    pickled, as_json, _ = dumped
    png = tmp_path / "out.png"
    r = run_python(["-m", "tessera.memory", str(pickled), "--png", str(png)])
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"wrote {png} (sim:0)" in r.stdout
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    r = run_python(["-m", "tessera.memory", str(as_json)])  # default: the snapshot's name with .png
    assert r.returncode == 0, r.stdout + r.stderr
    with open(tmp_path / "snap_json.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="no recorded history"):
        M.plot_history({"segments": [], "device_traces": [[]], "devices": [{"device": 0, "name": "sim:0"}]},
                       str(tmp_path / "none.png"))


def test_history_plots_keep_touching_plain_segments_apart_and_join_an_expandable_segments_mappings():
    two_mib = 2 * MiB
    snap = {"segments": [{"device": 0, "address": 0x100000, "total_size": two_mib, "is_expandable": False},
                         {"device": 0, "address": 0x100000 + two_mib, "total_size": two_mib,
                          "is_expandable": False},
                         {"device": 1, "address": 0x900000, "total_size": two_mib, "is_expandable": False}]}
    trace = [{"action": "segment_map", "addr": 0x4000000, "size": two_mib},
             {"action": "segment_map", "addr": 0x4000000 + two_mib, "size": two_mib},
             {"action": "segment_alloc", "addr": 0x8000000, "size": 3 * two_mib},
             {"action": "alloc", "addr": 0x8000000, "size": 512}]
    assert M._segment_ranges(snap, 0, trace) == [(0x100000, 0x100000 + two_mib),
                                                 (0x100000 + two_mib, 0x100000 + 2 * two_mib),
                                                 (0x4000000, 0x4000000 + 2 * two_mib),
                                                 (0x8000000, 0x8000000 + 3 * two_mib)]


# ---- out of memory, the per-process limit ---------------------------------------

OOM_SCRIPT = """
import json
import tessera
import tessera.memory as M

MiB = 1 << 20
out = {}
x = tessera.empty([30 * MiB // 4], device="sim")
del x  # 30 MiB cached
out["cached"] = M.memory_reserved("sim")
try:
    tessera.empty([100 * MiB // 4], device="sim")
except tessera.OutOfMemoryError as e:
    out["error"] = str(e)
    out["is_memory_error"] = isinstance(e, MemoryError)
    out["same_class"] = tessera.memory.OutOfMemoryError is tessera.OutOfMemoryError
out["num_ooms"] = M.memory_stats("sim")["num_ooms"]
out["reserved_after"] = M.memory_reserved("sim")  # the cache was released trying
M.empty_cache("sim")
y = tessera.ones([60 * MiB // 4], device="sim")
out["fits"] = y[-1].item()
del y
tessera.synchronize("sim")
M.empty_cache("sim")

M.set_per_process_memory_fraction(0.5, "sim")  # 32 MiB
try:
    tessera.empty([40 * MiB // 4], device="sim")
except tessera.OutOfMemoryError as e:
    out["limit_error"] = str(e)
z = tessera.empty([30 * MiB // 4], device="sim")
out["under_limit"] = M.memory_reserved("sim")
out["num_ooms_2"] = M.memory_stats("sim")["num_ooms"]
out["snapshot_fractions"] = [d["allocator_settings"]["per_process_memory_fraction"]
                             for d in M._snapshot(["cpu", "sim"])["devices"]]
out["bad_fractions"] = []
for f in (1.5, 0.0):
    try:
        M.set_per_process_memory_fraction(f, "sim")
    except ValueError as e:
        out["bad_fractions"].append(str(e))
print(json.dumps(out))
"""


def test_out_of_memory_and_the_per_process_limit():
    out = run_script(OOM_SCRIPT, TESSERA_SIM="memory_mb=64")
    assert out["cached"] == 30 * MiB
    message = out["error"]
    assert out["is_memory_error"] and out["same_class"]
    for part in ["sim:0", "104857600", "float32[26214400]", "device capacity: 64.00 MiB"]:
        assert part in message, (part, message)
    assert out["num_ooms"] == 1
    assert out["reserved_after"] == 0
    assert out["fits"] == 1.0

    assert "per_process_memory_fraction" in out["limit_error"], out["limit_error"]
    assert "41943040" in out["limit_error"]
    assert out["under_limit"] == 30 * MiB
    assert out["num_ooms_2"] == 2
    assert out["snapshot_fractions"][1] == 0.5 and out["snapshot_fractions"][0] != 0.5, out["snapshot_fractions"]
    assert len(out["bad_fractions"]) == 2
    assert "1.5" in out["bad_fractions"][0]


# ---- settings ----------------------------------------------------------------------

CONF_SCRIPT = """
import json
import tessera
import tessera.memory as M

out = {"initial": M.get_alloc_conf(), "errors": {}}
for bad in ("max_split_size_mb:19", "no_such_key:1", "garbage_collection_threshold:1.5"):
    try:
        M.set_alloc_conf(bad)
    except ValueError as e:
        out["errors"][bad] = str(e)
out["after_errors"] = M.get_alloc_conf()

# sim:0 gets its allocator under roundup_power2_divisions:4.
M.set_alloc_conf("roundup_power2_divisions:4")
out["conf"] = M.get_alloc_conf()
a = tessera.empty([1153432 // 4], device="sim:0")  # 1.1 MiB -> 1.25 MiB
out["rounded"] = M.memory_allocated("sim:0")
out["requested"] = M.memory_stats("sim:0")["requested_bytes.all.current"]

# sim:1 gets its allocator under expandable_segments:True; sim:0 keeps its settings.
M.set_alloc_conf("expandable_segments:True")
b = tessera.empty([3 * 2**20 // 4], device="sim:1")  # maps 2 granules of 2 MiB
c = tessera.empty([1153432 // 4], device="sim:1")  # 1153536: the free 1 MiB and 1 more granule
d = tessera.empty([3 * 2**20 // 4], device="sim:0")
s1, s0 = M.snapshot("sim:1"), M.snapshot("sim:0")
out["sim1"] = {
    "expandable": s1["allocator_settings"]["expandable_segments"],
    "segments": [[s["is_expandable"], s["total_size"]] for s in s1["segments"]],
    "reserved": M.memory_reserved("sim:1"),
    "allocated": M.memory_allocated("sim:1"),
    "segment_count": M.memory_stats("sim:1")["segment.all.current"],
}
out["sim0"] = {
    "expandable": s0["allocator_settings"]["expandable_segments"],
    "roundup": s0["allocator_settings"]["roundup_power2_divisions"],
    "segments": [s["is_expandable"] for s in s0["segments"]],
}
print(json.dumps(out))
"""


def test_allocator_settings_apply_to_allocators_built_afterwards():
    out = run_script(CONF_SCRIPT, TESSERA_SIM="devices=2")
    assert out["initial"] == ""
    errors = out["errors"]
    assert set(errors) == {"max_split_size_mb:19", "no_such_key:1", "garbage_collection_threshold:1.5"}, errors
    assert "max_split_size_mb" in errors["max_split_size_mb:19"] and "19" in errors["max_split_size_mb:19"]
    assert "no_such_key" in errors["no_such_key:1"]
    assert "garbage_collection_threshold" in errors["garbage_collection_threshold:1.5"]
    assert out["after_errors"] == "", "a refused setting changes nothing"

    assert out["conf"] == "roundup_power2_divisions:4"
    assert out["rounded"] == 1310720  # 1.25 MiB: the 4 steps between 1 and 2 MiB
    assert out["requested"] == 1153432

    sim1 = out["sim1"]
    assert sim1["expandable"] is True
    assert sim1["segments"] and all(expandable for expandable, _ in sim1["segments"])
    assert sum(size for _, size in sim1["segments"]) == 6 * MiB
    assert sim1["reserved"] == 6 * MiB
    assert sim1["allocated"] == 3 * MiB + 1153536
    assert sim1["segment_count"] == 0  # expandable segments are not counted in "segment"
    sim0 = out["sim0"]
    assert sim0["expandable"] is False and sim0["segments"] == [False]  # a's 20 MiB segment also holds d
    assert set(sim0["roundup"].values()) == {4}


# ---- pinned memory and non-blocking copies ------------------------------------------


def test_pinned_memory_and_non_blocking_copies(sim):
    a = tessera.ones([1000])
    assert not a.is_pinned() and not a.is_pinned("sim")
    p = a.pin_memory("sim")
    assert p.is_pinned() and p.is_pinned("sim")
    assert p.device == tessera.device("cpu") and p.tolist() == a.tolist()
    assert p.pin_memory("sim").data_ptr() == p.data_ptr()  # already pinned: itself
    on_sim = tessera.ones([1000], device=sim)
    with pytest.raises(ValueError, match="only cpu tensors can be pinned"):
        on_sim.pin_memory("sim")
    with pytest.raises(ValueError, match="offers no pinned host memory"):
        a.pin_memory("meta")

    values = [float(i) for i in range(1000)]
    src = tessera.arange(1000, dtype=tessera.float32).pin_memory("sim")
    dev = src.to(sim, non_blocking=True)
    assert dev.device == tessera.device("sim")
    back = dev.to("cpu", non_blocking=True)
    assert back.is_pinned("sim") and back.device == tessera.device("cpu")
    assert not dev.to("cpu").is_pinned()  # a blocking copy gives ordinary memory
    dst = tessera.zeros([1000]).pin_memory("sim")
    dst.copy_(dev * 2, non_blocking=True)
    tessera.synchronize(sim)
    assert back.tolist() == values
    assert dst.tolist() == [2 * v for v in values]
    assert M.memory_allocated(sim) == 2 * 4096  # on_sim, dev and nothing else (dev * 2 was freed)
    del on_sim, dev


# ---- record_stream -------------------------------------------------------------------

RECORD_STREAM_SCRIPT = """
import json, os
import tessera
import tessera.memory as M

def stat(key):
    return M.memory_stats("sim")[key]

os.environ["TESSERA_SIM_STREAM_LATENCY_US"] = "200000"
slow = tessera.Stream("sim")  # each launch on it waits 200 ms
del os.environ["TESSERA_SIM_STREAM_LATENCY_US"]
out = {}
x = tessera.ones([1 << 18], device="sim")  # 1 MiB
px = x.data_ptr()
slow.wait_stream(tessera.current_stream("sim"))
with tessera.stream(slow):
    y = x * 2  # reads x behind the slow stream's latency
x.record_stream(slow)
out["active"] = stat("active.all.current")
out["active_bytes"] = stat("active_bytes.all.current")
del x
out["active_after_del"] = stat("active.all.current")
out["allocated_after_del"] = M.memory_allocated("sim")
out["x_state"] = [b["state"] for s in M.memory_snapshot("sim") for b in s["blocks"] if b["address"] == px]
z = tessera.empty([1 << 18], device="sim")  # polls the event: not yet complete
out["z_reused"] = z.data_ptr() == px
out["slow_done_before_sync"] = slow.query()
out["active_with_z"] = stat("active.all.current")
slow.synchronize()
w = tessera.empty([1 << 18], device="sim")  # polls again: x's block is free now
out["w_reused"] = w.data_ptr() == px
out["active_with_w"] = stat("active.all.current")
out["active_bytes_with_w"] = stat("active_bytes.all.current")
out["y"] = y.sum().item()
print(json.dumps(out))
"""


def test_record_stream_keeps_memory_until_the_other_stream_is_done():
    out = run_script(RECORD_STREAM_SCRIPT)
    assert out["active"] == 2 and out["active_bytes"] == 2 * MiB  # x and y
    assert out["active_after_del"] == 2, "x's block is pending until the slow stream passes y's kernel"
    assert out["allocated_after_del"] == MiB  # y only: a pending block is not allocated
    assert out["x_state"] == ["active_pending_free"]
    assert not out["slow_done_before_sync"]
    assert not out["z_reused"]
    assert out["active_with_z"] == 3  # x (pending), y, z
    assert out["w_reused"]
    assert out["active_with_w"] == 3 and out["active_bytes_with_w"] == 3 * MiB  # y, z, w: x's block is gone
    assert out["y"] == 2.0 * (1 << 18)


def test_record_stream_of_another_device_is_refused(sim):
    x = tessera.ones([1000], device=sim)
    for other in (tessera.default_stream("cpu"), tessera.default_stream("meta")):
        with pytest.raises(ValueError, match="not on the tensor's device sim:0"):
            x.record_stream(other)
    x.record_stream(tessera.current_stream(sim))  # its own stream: nothing to do
    c = tessera.ones([1000])
    c.record_stream(tessera.current_stream("cpu"))  # synchronous: nothing to do
    del x
    tessera.synchronize(sim)
    assert M.memory_allocated(sim) == 0 and stat("active.all.current") == 0


# ---- where a new cpu output starts ----------------------------------------------------

WINDOW = 448  # docs/memory.md: an input d bytes below the output (mod 4 KiB), 1 <= d <= 448, stalls its loads


def alias_cost(out_ptr, in_ptr):
    d = (out_ptr - in_ptr) % 4096
    return WINDOW + 1 - d if 1 <= d <= WINDOW else 0


def numpy_at(page_offset, n, dtype="float32", seed=0):
    """A NumPy array of n elements whose data starts `page_offset` bytes into a 4 KiB page."""
    import numpy as np
    item = np.dtype(dtype).itemsize
    buf = np.random.default_rng(seed).uniform(0.5, 2.0, n + 8192 // item).astype(dtype)
    start = ((page_offset - buf.ctypes.data) % 4096) // item
    a = buf[start:start + n]
    assert a.ctypes.data % 4096 == page_offset
    return a


def test_a_new_cpu_output_starts_outside_its_inputs_alias_window():
    """NumPy's arrays start anywhere in a page; an op's new output is placed so that
    its input does not sit 1..448 bytes below it modulo 4 KiB (a number's tensor
    beside it does not count), keeps 64-byte alignment and holds the right
    values; the shifted blocks all go back to the allocator."""
    import numpy as np
    n = 1 << 16
    warm = tessera.ones([n]) * 3.0  # the number's small blocks stay in this thread's cache
    del warm
    gc.collect()
    before = M.memory_allocated("cpu")
    in_window_before = 0
    for offset in range(0, 4096, 16):
        a = numpy_at(offset, n)
        x = tessera.from_dlpack(a)
        in_window_before += alias_cost(0, x.data_ptr()) != 0  # where a page-aligned output would sit
        results = [(tessera.reciprocal(x), 1 / a), (tessera.exp(x), np.exp(a)), (x * 3.0, a * np.float32(3)),
                   (x + x, a + a), (x.clone(), a), (x.to(tessera.float64), a.astype(np.float64))]
        for r, expected in results:
            assert r.data_ptr() % 64 == 0
            assert alias_cost(r.data_ptr(), x.data_ptr()) == 0, (offset, r.data_ptr() % 4096)
            np.testing.assert_allclose(np.asarray(r), expected, rtol=2e-7, atol=0)
        del results, r
    assert in_window_before == 28  # the offsets 3648 .. 4080 would have stalled
    del x
    gc.collect()
    assert M.memory_allocated("cpu") == before


def test_outputs_of_two_inputs_take_the_least_bad_place_and_our_own_stay_on_their_blocks():
    """Two inputs can leave no place clear of both: the output then takes the place
    whose worst input sits farthest below it, among its block's first 512 bytes."""
    import numpy as np
    n = 1 << 15
    for ox in range(0, 4096, 64):
        for oy in (ox - 64, ox + 100 * 16, 4032, 16):
            oy %= 4096
            a, b = numpy_at(ox, n), numpy_at(oy, n, seed=1)
            x, y = tessera.from_dlpack(a), tessera.from_dlpack(b)
            r = tessera.mul(x, y)
            block = r.data_ptr() & ~511
            best = min(max(alias_cost(block + s, p) for p in (x.data_ptr(), y.data_ptr())) for s in range(0, 512, 64))
            assert max(alias_cost(r.data_ptr(), p) for p in (x.data_ptr(), y.data_ptr())) == best, (ox, oy)
            np.testing.assert_array_equal(np.asarray(r), a * b)
    own = tessera.rand([n]) + 1
    for r in (own.reciprocal(), own + own, own.clone()):
        assert r.data_ptr() % 512 == 0  # a block start: never shifted for inputs that are themselves blocks


PLACEMENT_UNDER_LIMIT_SCRIPT = """
import json, os
import numpy as np
import tessera
import tessera.memory as M

MiB = 1 << 20
total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
n = 60 * MiB // 4
buf = np.ones(n + 4096, np.float32)
start = ((4032 - buf.ctypes.data) % 4096) // 4
a = buf[start:start + n]  # 64 bytes below a page start
x = tessera.from_dlpack(a)
# Room for the output's 60 MiB but not for the 512 more a placed block takes.
M.set_per_process_memory_fraction((M.memory_reserved("cpu") + 60 * MiB + 256) / total, "cpu")
r = x.neg()
out = {"limited": r.data_ptr() % 4096, "right": bool(np.array_equal(np.asarray(r), -a))}
del r
M.set_per_process_memory_fraction(1.0, "cpu")
r = x.neg()
out["free"] = r.data_ptr() % 4096
out["right_free"] = bool(np.array_equal(np.asarray(r), -a))
print(json.dumps(out))
"""


def test_an_output_with_no_room_to_be_placed_takes_an_ordinary_block():
    """The larger block a placed output needs does not fit under the limit: the
    output takes an ordinary block (in the window, right values) instead of
    failing; with the limit lifted the same op places it."""
    out = run_script(PLACEMENT_UNDER_LIMIT_SCRIPT)
    assert out["right"] and out["right_free"]
    assert alias_cost(out["limited"], 4032) != 0
    assert alias_cost(out["free"], 4032) == 0


# ---- devices without the allocator ----------------------------------------------------


@pytest.mark.parametrize("call", [
    M.memory_allocated, M.max_memory_allocated, M.memory_reserved, M.max_memory_reserved, M.memory_stats,
    M.reset_peak_memory_stats, M.reset_accumulated_memory_stats, M.memory_summary, M.empty_cache,
    M.record_memory_history, M.snapshot, M.memory_snapshot,
])
def test_meta_has_no_memory(call):
    with pytest.raises(ValueError, match="meta:0 .*does not use the core's caching allocator"):
        if call is M.record_memory_history:
            call(True, "meta")
        else:
            call("meta")


def test_bad_devices_are_value_errors():
    with pytest.raises(ValueError, match="does not use the core's caching allocator"):
        M.set_per_process_memory_fraction(0.5, "meta")
    with pytest.raises(ValueError, match="sim:5 does not exist"):
        M.memory_allocated("sim:5")
    with pytest.raises(ValueError, match="unknown device type 'nope'"):
        M.memory_stats("nope")
