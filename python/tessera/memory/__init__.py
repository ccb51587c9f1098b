"""The core's caching allocator, with torch.cuda.memory's names and a device
argument (docs/memory.md).

Every device whose plugin asks for the core's allocator (cpu, sim, cuda) has
one; ``device`` is a ``tessera.device`` or a string such as ``"sim:0"`` and
defaults to ``"cpu"``. A device type without the allocator (meta) is a
``ValueError``.

``python -m tessera.memory SNAPSHOT [--png FILE]`` (``__main__.py``) prints a
summary of a snapshot written by ``dump_snapshot`` (pickle or JSON) and draws
memory use over its recorded history, by segment, as a PNG (needs matplotlib).
"""
import bisect
import collections
import json
import os
import pickle

from tessera import _C

__all__ = [
    "OutOfMemoryError",
    "dump_snapshot",
    "empty_cache",
    "get_alloc_conf",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "memory_summary",
    "record_memory_history",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "set_alloc_conf",
    "set_per_process_memory_fraction",
    "snapshot",
]

OutOfMemoryError = _C.OutOfMemoryError


def set_alloc_conf(conf):
    """Sets the allocator configuration (``TESSERA_ALLOC_CONF``'s syntax, e.g.
    ``"max_split_size_mb:64,expandable_segments:True"``) for allocators built
    afterwards: call it before the first allocation on a device. ``ValueError``
    naming the key for a bad setting."""
    _C._set_alloc_conf(conf)


def get_alloc_conf():
    """The configuration new allocators get, as text."""
    return _C._alloc_conf()


def set_per_process_memory_fraction(fraction, device=None):
    """Limits ``device``'s allocator to ``fraction`` (0 < fraction <= 1) of the
    device's memory from now on."""
    _C._set_per_process_memory_fraction(fraction, device)


def memory_allocated(device=None):
    """Bytes held by tensors on ``device`` now."""
    return _C._memory_allocated(device)


def max_memory_allocated(device=None):
    """The peak of ``memory_allocated`` since the last ``reset_peak_memory_stats``."""
    return _C._max_memory_allocated(device)


def memory_reserved(device=None):
    """Bytes the allocator holds from ``device`` (allocated and cached)."""
    return _C._memory_reserved(device)


def max_memory_reserved(device=None):
    """The peak of ``memory_reserved`` since the last ``reset_peak_memory_stats``."""
    return _C._max_memory_reserved(device)


def memory_stats(device=None):
    """Every statistic, keyed as ``torch.cuda.memory_stats()`` (sorted)."""
    return collections.OrderedDict(sorted(_C._memory_stats(device).items()))


def reset_peak_memory_stats(device=None):
    _C._reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None):
    _C._reset_accumulated_memory_stats(device)


def memory_summary(device=None):
    """A readable table of ``device``'s statistics."""
    return _C._memory_summary(device)


def empty_cache(device=None):
    """Returns every unused cached segment of ``device`` (None: of every device)
    to its plugin."""
    _C._empty_cache(device)


def record_memory_history(enabled=True, device=None, max_entries=100000):
    """Starts (``enabled`` true, or torch's ``"all"``/``"state"``) or stops
    (``False``/``None``) recording ``device``'s allocator events with their C++
    call stacks, keeping the last ``max_entries``. Stopping clears the history."""
    on = enabled not in (None, False)
    _C._record_memory_history(on, device, max_entries)


_record_memory_history = record_memory_history  # torch.cuda.memory's private name


def snapshot(devices=None):
    """The allocator state of ``devices`` (None: every device with an
    allocator) as the dict of ``torch.cuda.memory._snapshot()``: ``segments``,
    ``device_traces``, ``allocator_settings`` and Tessera's ``devices``."""
    return pickle.loads(_C._memory_snapshot_pickle(_device_list(devices)))


_snapshot = snapshot


def memory_snapshot(devices=None):
    """The segments of ``snapshot(devices)`` (``torch.cuda.memory_snapshot()``)."""
    return snapshot(devices)["segments"]


def dump_snapshot(path="dump_snapshot.pickle", devices=None):
    """Writes ``snapshot(devices)`` to ``path``: a pickle PyTorch's memory
    visualizer reads (https://pytorch.org/memory_viz), or JSON for a path ending
    in ``.json``."""
    _C._dump_memory_snapshot(os.fspath(path), _device_list(devices))


_dump_snapshot = dump_snapshot


def _device_list(devices):
    if devices is None:
        return None
    if isinstance(devices, (str, _C.device)):
        return [devices]
    return list(devices)


# ---- reading snapshots (python -m tessera.memory) ------------------------------


def load_snapshot(path):
    """A snapshot file (pickle or JSON) as the dict ``snapshot()`` returns."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:1] == b"\x80":  # a pickle's PROTO opcode
        return pickle.loads(data)
    return json.loads(data.decode("utf-8"))


def _fmt(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.2f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024.0
    return str(n)


def _device_names(snap):
    names = {d["device"]: d["name"] for d in snap.get("devices", [])}
    for s in snap.get("segments", []):
        names.setdefault(s["device"], f"device {s['device']}")
    for i, trace in enumerate(snap.get("device_traces", [])):
        if trace:
            names.setdefault(i, f"device {i}")
    return names


def summarize(snap):
    """The text ``python -m tessera.memory`` prints: per device, the segments
    and blocks by state, and the recorded history's events and peaks."""
    lines = []
    settings = snap.get("allocator_settings", {})
    lines.append(f"allocator settings: {settings.get('TESSERA_ALLOC_CONF') or '(defaults)'}")
    traces = snap.get("device_traces", [])
    for dev, name in sorted(_device_names(snap).items()):
        segs = [s for s in snap.get("segments", []) if s["device"] == dev]
        blocks = [b for s in segs for b in s["blocks"]]
        by_state = collections.Counter(b["state"] for b in blocks)
        bytes_by_state = collections.Counter()
        for b in blocks:
            bytes_by_state[b["state"]] += b["size"]
        free = [b["size"] for b in blocks if b["state"] == "inactive"]
        lines.append(f"\n{name}")
        lines.append(f"  segments:         {len(segs)} ({sum(1 for s in segs if s['segment_type'] == 'small')} small, "
                     f"{sum(1 for s in segs if s['segment_type'] == 'large')} large, "
                     f"{sum(1 for s in segs if s['is_expandable'])} expandable)")
        lines.append(f"  reserved:         {_fmt(sum(s['total_size'] for s in segs))}")
        lines.append(f"  allocated:        {_fmt(sum(s['allocated_size'] for s in segs))} in "
                     f"{by_state['active_allocated']} blocks (requested {_fmt(sum(s['requested_size'] for s in segs))})")
        lines.append(f"  pending free:     {_fmt(bytes_by_state['active_pending_free'])} in "
                     f"{by_state['active_pending_free']} blocks")
        lines.append(f"  cached (free):    {_fmt(bytes_by_state['inactive'])} in {by_state['inactive']} blocks"
                     f"{', largest ' + _fmt(max(free)) if free else ''}")
        trace = traces[dev] if dev < len(traces) else []
        if trace:
            actions = collections.Counter(e["action"] for e in trace)
            alloc_peak, reserved_peak = _peaks(trace)
            span_ms = (trace[-1]["time_us"] - trace[0]["time_us"]) / 1000.0
            lines.append(f"  history:          {len(trace)} events over {span_ms:.1f} ms: " +
                         ", ".join(f"{a} {n}" for a, n in sorted(actions.items())))
            lines.append(f"  history peaks:    allocated +{_fmt(alloc_peak)}, reserved +{_fmt(reserved_peak)} "
                         "(above the state when recording began)")
        else:
            lines.append("  history:          none recorded (record_memory_history)")
    return "\n".join(lines)


def _peaks(trace):
    alloc = reserved = alloc_peak = reserved_peak = 0
    for e in trace:
        a = e["action"]
        if a == "alloc":
            alloc += e["size"]
        elif a == "free_completed":
            alloc -= e["size"]
        elif a in ("segment_alloc", "segment_map"):
            reserved += e["size"]
        elif a in ("segment_free", "segment_unmap"):
            reserved -= e["size"]
        alloc_peak = max(alloc_peak, alloc)
        reserved_peak = max(reserved_peak, reserved)
    return alloc_peak, reserved_peak


def _segment_ranges(snap, dev, trace):
    """Address ranges of the device's segments over the whole history. Plain
    segments stay apart even where they touch; the mappings of an expandable
    segment (segment_map events, snapshot segments marked is_expandable) that
    touch join into one range."""
    plain, expandable = {}, {}
    for s in snap.get("segments", []):
        if s["device"] == dev:
            into = expandable if s.get("is_expandable") else plain
            into[s["address"]] = max(into.get(s["address"], 0), s["total_size"])
    for e in trace:
        into = {"segment_alloc": plain, "segment_map": expandable}.get(e["action"])
        if into is not None:
            into[e["addr"]] = max(into.get(e["addr"], 0), e["size"])
    merged = []
    for a in sorted(expandable):
        end = a + expandable[a]
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((a, end))
    merged += [(a, a + size) for a, size in plain.items()]
    return sorted(merged)


def plot_history(snap, png_path, max_segments=12):
    """Draws each device's allocated memory over its recorded history, stacked
    by segment (the largest ``max_segments``; the rest as one band), with the
    reserved total as a line. Returns the devices drawn. ImportError without
    matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces = snap.get("device_traces", [])
    devices = [(d, n) for d, n in sorted(_device_names(snap).items()) if d < len(traces) and traces[d]]
    if not devices:
        raise ValueError("the snapshot has no recorded history to draw (record_memory_history before the work)")
    fig, axes = plt.subplots(len(devices), 1, figsize=(11, 4 * len(devices)), squeeze=False)
    for ax, (dev, name) in zip(axes[:, 0], devices):
        trace = traces[dev]
        ranges = _segment_ranges(snap, dev, trace)
        starts = [r[0] for r in ranges]

        def seg_of(addr):
            i = bisect.bisect_right(starts, addr) - 1
            return i if i >= 0 and addr < ranges[i][1] else -1

        t0 = trace[0]["time_us"]
        xs, per_seg, reserved_line = [], [], []
        cur = collections.Counter()
        reserved = 0
        for e in trace:
            a = e["action"]
            if a == "alloc":
                cur[seg_of(e["addr"])] += e["size"]
            elif a == "free_completed":
                cur[seg_of(e["addr"])] -= e["size"]
            elif a in ("segment_alloc", "segment_map"):
                reserved += e["size"]
            elif a in ("segment_free", "segment_unmap"):
                reserved -= e["size"]
            xs.append((e["time_us"] - t0) / 1000.0)
            per_seg.append(dict(cur))
            reserved_line.append(reserved)
        peak = collections.Counter()
        for snapshot_row in per_seg:
            for k, v in snapshot_row.items():
                peak[k] = max(peak[k], v)
        shown = [k for k, _ in peak.most_common(max_segments)]
        bands = [[row.get(k, 0) for row in per_seg] for k in shown]
        rest = [sum(v for k, v in row.items() if k not in shown) for row in per_seg]
        labels = [f"segment @ {hex(ranges[k][0])}" if k >= 0 else "outside known segments" for k in shown]
        if any(rest):
            bands.append(rest)
            labels.append("other segments")
        mib = 1024.0 * 1024.0
        ax.stackplot(xs, [[v / mib for v in band] for band in bands], labels=labels, step="post")
        ax.step(xs, [v / mib for v in reserved_line], where="post", color="black", linewidth=1,
                label="reserved (change since recording began)")
        ax.set_title(f"{name}: allocated memory by segment over the recorded history")
        ax.set_xlabel("time since the first recorded event (ms)")
        ax.set_ylabel("MiB")
        ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return [n for _, n in devices]
