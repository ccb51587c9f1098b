"""A Hypothesis fuzzer for the Python module: random ops, random arguments.

Each example draws an op of ``tessera._C`` (a function or a Tensor method; every
overload nanobind reports in ``__nb_signature__``, in-place methods included)
and arguments for its signature: tensors of every dtype with random shapes
(0-d, empty, size 1, broadcastable, mismatched), layouts (transposed, sliced,
flipped to negative strides, expanded to stride 0, read-only), devices (cpu,
meta) and requires_grad; numbers (NaN, inf, huge ints, bools); dims in and out
of range; sizes; strings; dtypes; None. It calls the op and asserts that the
call either succeeds (and its results can be read) or raises an exception
Tessera raises on purpose: ValueError, TypeError, IndexError,
NotImplementedError, OverflowError, MemoryError, RuntimeError or BufferError,
whose message is not a C++ library exception that leaked through
(``vector::_M_range_check``, ``std::bad_alloc``, ...).

Every batch of examples runs in a child process, which writes each call to a
log before making it, so a crash (a dead child: SIGSEGV, abort, a sanitizer
report) or a hang (faulthandler's per-call timer) is reported with the call
that caused it. Usage:

    fuzz_ops.py --examples 300              # CTest: fixed seeds, a few hundred examples
    fuzz_ops.py --seconds 600               # scripts/fuzz.sh python 600: random seeds until time is up
    fuzz_ops.py --replay LOGLINE            # run one logged call again, in this process
    fuzz_ops.py --regressions DIR ...       # first replay the calls saved in DIR (one child each)

Memory: generated tensors hold at most 4096 elements; a child limits its
address space (RLIMIT_AS, about 1 GiB above what it uses after start-up; under
AddressSanitizer, ASAN_OPTIONS max_allocation_size_mb instead), so a call with
huge sizes fails with MemoryError instead of taking the machine's memory.
"""
from __future__ import annotations

import argparse
import ast
import faulthandler
import json
import math
import os
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback

ALLOWED = (ValueError, TypeError, IndexError, NotImplementedError, OverflowError, MemoryError, RuntimeError,
           BufferError)
# What the message of an exception that C++ code let escape looks like: libstdc++'s
# what() strings, nanobind's cast failures, bare std:: names.
LEAKED = re.compile(
    r"std::|vector::|basic_string|_M_[a-z_]+|\bsto(i|l|ll|ul|ull|f|d)\b|map::at|_Map_base::at|array::at|"
    r"bitset::|bad_alloc|bad_variant_access|bad optional access|bad_function_call|bad any_cast|"
    r"bad_array_new_length|Unable to cast|nanobind::|boost::")
# Findings already reported and not fixed yet, each (why, owner, test(call_line, message)). A
# matching finding is counted and listed but does not fail the run; remove the
# entry with the fix, so that the fuzzer guards against its return.
KNOWN_ISSUES: list = []
MAX_NUMEL = 4096
CALL_TIMEOUT_S = 60  # a single call running longer is a hang

DTYPE_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
FLOAT_NAMES = {"float16", "bfloat16", "float32", "float64"}
SKIPPED = {
    "load_plugin",  # a random path could name a real library
    "register_hook", "register_post_accumulate_grad_hook",  # callables
    "__init__", "__new__", "__enter__", "__exit__", "__hash__", "__getstate__", "__setstate__",
}
BIG_INTS = [2**31 - 1, 2**31, 2**32, 2**62, 2**63 - 1, 2**63, 2**64, -(2**31), -(2**63), -(2**63) - 1, 10**6]
STRINGS = ["mean", "sum", "none", "tanh", "fro", "nuc", "trunc", "floor", "constant", "reflect", "cpu", "meta",
           "cpu:0", "cpu:1", "cuda", "float32", "", "x" * 40, "\u00e9", "inf"]


# ---------------------------------------------------------------------------
# Signatures

def _normalize(annotation: str | None) -> str:
    if annotation is None:
        return "object"
    a = annotation.replace("tessera._C.", "").replace("collections.abc.", "").replace("typing.", "")
    return a.replace(" ", "")


def parse_signature(text: str):
    """(name, [(param, annotation, kind, has_default)]) from a nanobind signature line."""
    text = re.sub(r"\\\d+", "...", text)
    fn = ast.parse(text + ": ...").body[0]
    args = fn.args
    params = []
    positional = args.posonlyargs + args.args
    first_default = len(positional) - len(args.defaults)
    for i, a in enumerate(positional):
        kind = "posonly" if i < len(args.posonlyargs) else "pos"
        params.append((a.arg, _normalize(ast.unparse(a.annotation) if a.annotation else None), kind,
                       i >= first_default))
    if args.vararg is not None:
        params.append((args.vararg.arg, "varargs", "varargs", True))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        params.append((a.arg, _normalize(ast.unparse(a.annotation) if a.annotation else None), "kwonly",
                       d is not None))
    return fn.name, params


def discover_ops(tessera):
    """[(kind, name, params)] for every overload of every nanobind function and Tensor method."""
    C = tessera._C
    ops = []

    def add(kind, name, obj):
        sigs = getattr(obj, "__nb_signature__", None)
        if not sigs or name in SKIPPED:
            return
        for entry in sigs:
            try:
                _, params = parse_signature(entry[0])
            except SyntaxError:
                continue
            if any("Callable" in p[1] for p in params):
                continue
            if kind == "method":
                if not params or params[0][0] != "self":
                    continue
                params = params[1:]
            ops.append((kind, name, params))

    for name in sorted(dir(C)):
        obj = getattr(C, name)
        if type(obj).__name__ == "nb_func":
            add("function", name, obj)
    for name in sorted(dir(C.Tensor)):
        obj = C.Tensor.__dict__.get(name)
        if obj is not None and type(obj).__name__ in ("nb_func", "nb_method"):
            add("method", name, obj)
    return ops


# ---------------------------------------------------------------------------
# Tensors, made from a recipe so that a logged call can be made again

class T:
    """A recipe for a tensor; make() builds it. repr() is code that rebuilds it."""

    def __init__(self, dtype, shape, layout, device, seed, requires_grad, read_only):
        self.dtype, self.shape, self.layout, self.device = dtype, tuple(shape), layout, device
        self.seed, self.requires_grad, self.read_only = seed, requires_grad, read_only

    def __repr__(self):
        return (f"T({self.dtype!r}, {self.shape!r}, {self.layout!r}, {self.device!r}, {self.seed!r}, "
                f"{self.requires_grad!r}, {self.read_only!r})")

    def make(self):
        import numpy as np
        import tessera
        rng = np.random.default_rng(self.seed)
        shape = self.shape
        base_shape = list(shape)
        if self.layout == "transposed" and len(shape) >= 2:
            base_shape[0], base_shape[-1] = base_shape[-1], base_shape[0]
        elif self.layout == "sliced" and len(shape) >= 1:
            base_shape[0] = base_shape[0] * 2 + 1
        values = _values(rng, self.dtype, int(np.prod(base_shape)) if base_shape else 1)
        np_dtype = "float32" if self.dtype == "bfloat16" else self.dtype
        arr = values.astype(np_dtype).reshape(base_shape)
        if self.layout == "flipped":
            arr = np.asarray(np.flip(arr))  # negative strides through DLPack
        if self.read_only:
            arr.flags.writeable = False
        t = tessera.from_dlpack(arr)
        if self.dtype == "bfloat16":
            t = t.to(tessera.bfloat16)
        if self.layout == "transposed" and len(shape) >= 2:
            t = t.transpose(0, len(shape) - 1)
        elif self.layout == "sliced" and len(shape) >= 1:
            t = t.slice(0, 1, base_shape[0], 2)
        elif self.layout == "expanded" and len(shape) >= 1:
            t = t.narrow(0, 0, min(1, shape[0])).expand(*shape) if shape[0] != 0 else t
        if self.device != "cpu":
            t = t.to(self.device)
        if self.requires_grad and self.dtype in FLOAT_NAMES:
            t = t.detach().requires_grad_()
        return t


def _values(rng, dtype, n):
    import numpy as np
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if dtype in FLOAT_NAMES:
        special = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.nan, np.inf, -np.inf, 1e-30, 3e38, 65504.0, 7.0])
        v = rng.normal(0, 10, n)
        pick = rng.random(n) < 0.2
        v[pick] = rng.choice(special, int(pick.sum()))
        return v
    info = np.iinfo(dtype)
    v = rng.integers(-10, 10, n, endpoint=True).astype(np.int64)
    pick = rng.random(n) < 0.2
    v[pick] = rng.choice(np.array([info.min, info.max, 0, 1, -1], dtype=np.int64), int(pick.sum()))
    return np.clip(v, info.min, info.max)


def _cap(shape):
    shape = list(shape)
    while shape and math.prod(shape) > MAX_NUMEL:
        i = max(range(len(shape)), key=lambda j: shape[j])
        shape[i] = max(1, shape[i] // 2)
    return tuple(shape)


# ---------------------------------------------------------------------------
# Strategies

def strategies():
    from hypothesis import strategies as st

    sizes = st.sampled_from([0, 1, 1, 2, 2, 3, 4, 5, 7, 16, 33])
    shapes = st.lists(sizes, min_size=0, max_size=4).map(_cap)

    @st.composite
    def tensor_recipe(draw, like=None):
        if like is not None and draw(st.integers(0, 9)) < 6:
            shape = like.shape
            if shape and draw(st.booleans()):  # broadcastable: some dims 1, or fewer leading dims
                shape = tuple(1 if draw(st.integers(0, 2)) == 0 else s for s in shape)
                shape = shape[draw(st.integers(0, len(shape))):]
            dtype = like.dtype if draw(st.booleans()) else draw(st.sampled_from(DTYPE_NAMES))
            device = like.device if draw(st.integers(0, 9)) < 9 else draw(st.sampled_from(["cpu", "meta"]))
        else:
            shape = draw(shapes)
            dtype = draw(st.sampled_from(DTYPE_NAMES))
            device = draw(st.sampled_from(["cpu"] * 9 + ["meta"]))
        layout = draw(st.sampled_from(["contiguous"] * 4 + ["transposed", "sliced", "flipped", "expanded"]))
        return T(dtype, shape, layout, device, draw(st.integers(0, 2**32 - 1)),
                 draw(st.integers(0, 4)) == 0, draw(st.integers(0, 9)) == 0)

    small_ints = st.integers(-3, 8)
    ints = st.one_of(small_ints, small_ints, small_ints, st.sampled_from(BIG_INTS))
    floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                       st.sampled_from([0.0, -0.0, 0.5, 1.0, -1.0, 2.0, 1e-8, float("nan"), float("inf"), -float("inf")]))
    numbers = st.one_of(st.booleans(), ints, floats)
    int_lists = st.lists(ints, max_size=5)
    strings = st.one_of(st.sampled_from(STRINGS), st.text(max_size=6))
    dtypes = st.sampled_from(DTYPE_NAMES).map(lambda n: ("dtype", n))
    devices = st.sampled_from(["cpu", "meta", "cpu:0", "cpu:3", "nowhere"]).map(lambda n: ("device", n))
    return st, tensor_recipe, ints, floats, numbers, int_lists, strings, dtypes, devices


def draw_value(draw, st, S, annotation, first):
    tensor_recipe, ints, floats, numbers, int_lists, strings, dtypes, devices = S
    optional = annotation.endswith("|None")
    a = annotation[: -len("|None")] if optional else annotation
    if optional and draw(st.integers(0, 3)) == 0:
        return None
    if a == "Tensor":
        return draw(tensor_recipe(first))
    if a in ("bool|int|float", "float|int|bool"):
        return draw(numbers)
    if a == "int":
        return draw(ints)
    if a == "float":
        return draw(floats)
    if a == "bool":
        return draw(st.booleans())
    if a == "str":
        return draw(strings)
    if a == "dtype":
        return draw(dtypes)
    if a == "device":
        return draw(devices)
    if a == "Generator":
        return ("generator", draw(st.integers(0, 2**64 - 1)))
    if a.startswith("Sequence[Tensor]") or a.startswith("list[Tensor]"):
        return draw(st.lists(tensor_recipe(first), max_size=4))
    if "tuple[int" in a or "list[int]" in a or "Sequence[int]" in a:
        return draw(st.one_of(ints, int_lists, int_lists.map(tuple)))
    # object, or a type not special-cased: anything
    return draw(st.one_of(ints, int_lists, int_lists.map(tuple), numbers, strings, st.none(),
                          tensor_recipe(first), dtypes))


def materialize(v):
    """Replaces recipes in a drawn argument by the objects."""
    import tessera
    if isinstance(v, T):
        return v.make()
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "dtype":
        return getattr(tessera, v[1])
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "device":
        return v[1]  # device arguments take strings
    if isinstance(v, tuple) and len(v) == 2 and v[0] == "generator":
        return tessera.Generator(v[1])
    if isinstance(v, list):
        return [materialize(x) for x in v]
    if isinstance(v, tuple):
        return tuple(materialize(x) for x in v)
    return v


# ---------------------------------------------------------------------------
# One call

class Finding(Exception):
    pass


def check_result(r, depth=0):
    """Reads what a call returned, so that bad metadata or memory shows up."""
    import tessera
    if depth > 3:
        return
    if isinstance(r, tessera.Tensor):
        shape = r.shape
        if r.numel() != math.prod(shape) or r.dim() != len(shape):
            raise Finding(f"result metadata is inconsistent: shape {shape}, numel {r.numel()}, dim {r.dim()}")
        if r.device.type == "cpu" and r.numel() <= 1_000_000:
            c = r.contiguous()
            if c.shape != shape:
                raise Finding(f"contiguous() changed the shape {shape} to {c.shape}")
            if math.prod(max(d, 1) for d in shape) <= 256:  # tolist() of (2**31, 0) is 2**31 lists
                repr(r)
                r.tolist()
    elif isinstance(r, (tuple, list)):
        for x in r:
            check_result(x, depth + 1)


def run_call(call):
    """call = (kind, name, args, kwargs) with recipes; raises Finding on a bug."""
    import tessera
    kind, name, args, kwargs = call
    args = [materialize(a) for a in args]
    kwargs = {k: materialize(v) for k, v in kwargs.items()}
    try:
        if kind == "function":
            r = getattr(tessera._C, name)(*args, **kwargs)
        else:
            self, *rest = args
            r = getattr(self, name)(*rest, **kwargs)
    except ALLOWED as e:
        msg = str(e)
        if LEAKED.search(msg):
            raise Finding(f"a C++ exception leaked out as {type(e).__name__}: {msg}") from e
        return type(e).__name__, msg
    except Exception as e:  # noqa: BLE001 - anything else is a finding
        raise Finding(f"unexpected {type(e).__name__}: {e}\n{traceback.format_exc()}") from e
    try:
        check_result(r)
    except ALLOWED as e:
        raise Finding(f"reading the result raised {type(e).__name__}: {e}") from e
    return "ok", ""


def format_call(call):
    return repr(call)


def known_issue(line, msg):
    if os.environ.get("TSR_FUZZ_OPS_STRICT"):  # every finding fails, known or not (checking a fix)
        return None
    return next((k for k in KNOWN_ISSUES if k[2](line, msg)), None)


# ---------------------------------------------------------------------------
# Child: one batch of examples under Hypothesis

def child(args):
    import tessera  # noqa: F401 - import before the memory limit
    from hypothesis import HealthCheck, given, seed, settings

    tessera.ones(64, 64) @ tessera.ones(64, 64)  # start BLAS and OpenMP threads before the limit
    limit_memory()
    ops = discover_ops(tessera)
    st, tensor_recipe, *rest = strategies()
    S = (tensor_recipe, *rest)
    log = open(args.log, "w", buffering=1)
    stats = {"examples": 0, "outcomes": {}, "runtime_errors": {}, "known": {}}

    @st.composite
    def calls(draw):
        kind, name, params = draw(st.sampled_from(ops))
        first = draw(tensor_recipe()) if kind == "method" else None
        call_args = [first] if kind == "method" else []
        kwargs = {}
        skipping = False
        for pname, ann, pkind, has_default in params:
            if pkind == "varargs":
                call_args += draw(st.one_of(st.lists(S[1], max_size=4), S[4].map(lambda v: [v]),
                                            st.lists(tensor_recipe(first), max_size=2)))
                continue
            if has_default and draw(st.integers(0, 2)) == 0:
                skipping = True  # left to its default; later positional ones go by keyword
                continue
            value = draw_value(draw, st, S, ann, first)
            if first is None and isinstance(value, T):
                first = value
            if pkind == "posonly" or (pkind == "pos" and not skipping):
                call_args.append(value)
            else:
                kwargs[pname] = value
        return (kind, name, call_args, kwargs)

    @settings(max_examples=args.examples, database=None, deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck), print_blob=False)
    @seed(args.seed)
    @given(calls())
    def fuzz(call):
        line = format_call(call)
        log.write(line + "\n")
        os.fsync(log.fileno())
        faulthandler.dump_traceback_later(CALL_TIMEOUT_S, exit=True)
        try:
            outcome, msg = run_call(call)
        except Finding as f:
            known = known_issue(line, str(f))
            if known is None:
                raise AssertionError(f"{f}\n  call: {line}") from None
            outcome, msg = "known issue", known[0]
            stats["known"][known[0]] = stats["known"].get(known[0], 0) + 1
        finally:
            faulthandler.cancel_dump_traceback_later()
        stats["examples"] += 1
        stats["outcomes"][outcome] = stats["outcomes"].get(outcome, 0) + 1
        if outcome == "RuntimeError":
            key = msg[:100]
            stats["runtime_errors"][key] = stats["runtime_errors"].get(key, 0) + 1

    try:
        fuzz()
    finally:
        with open(args.stats, "w") as f:
            json.dump(stats, f)
    log.write("DONE\n")


def limit_memory():
    if "asan" in os.environ.get("LD_PRELOAD", "") or "TSR_FUZZ_NO_RLIMIT" in os.environ:
        return  # ASan needs its address space; ASAN_OPTIONS caps allocations instead
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    limit = vm + (1 << 30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


# ---------------------------------------------------------------------------
# Parent: batches in child processes

def child_env():
    """The environment of a child: under ASan (no address-space limit there) an
    allocation cap, so that huge sizes fail with MemoryError as they do elsewhere."""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS", ""),
                                                 "max_allocation_size_mb=1024", "allocator_may_return_null=1"]))
    return env


def run_batch(seed, examples, timeout):
    with tempfile.TemporaryDirectory(prefix="tessera-fuzz-ops-") as tmp:
        log = os.path.join(tmp, "calls.log")
        stats_path = os.path.join(tmp, "stats.json")
        env = child_env()
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--seed", str(seed),
               "--examples", str(examples), "--log", log, "--stats", stats_path]
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
            rc, out = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out = "timeout", (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
        lines = open(log).read().splitlines() if os.path.exists(log) else []
        stats = json.load(open(stats_path)) if os.path.exists(stats_path) else None
    return rc, out, lines, stats


SANITIZER_REPORT = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error: |ThreadSanitizer")


def crashed(rc, out):
    """A dead child: a signal, or a sanitizer report (they exit with status 1)."""
    return isinstance(rc, int) and (rc < 0 or (rc > 0 and SANITIZER_REPORT.search(out) is not None))


def describe_rc(rc, out=""):
    if rc == "timeout":
        return "the batch timed out"
    if isinstance(rc, int) and rc < 0:
        return f"the child died of signal {signal.Signals(-rc).name}"
    if crashed(rc, out):
        return "the child stopped at a sanitizer report"
    return f"the child exited with status {rc}"


def replay_regressions(folder, total):
    """Makes each call saved in `folder` (one file each: the logged call on its
    first line that is not a # comment), each in a child; returns the failures."""
    failures = 0
    names = sorted(n for n in os.listdir(folder) if not n.startswith(".") and n != "README.md")
    for name in names:
        with open(os.path.join(folder, name)) as f:
            line = next(x.strip() for x in f if x.strip() and not x.startswith("#"))
        cmd = [sys.executable, os.path.abspath(__file__), "--child-call", line]
        try:
            p = subprocess.run(cmd, env=child_env(), capture_output=True, text=True, timeout=CALL_TIMEOUT_S * 2)
            rc, out = p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired:
            rc, out = "timeout", ""
        known = None
        if crashed(rc, out):
            known = known_issue(line, f"crash: {describe_rc(rc, out)}")
        elif rc == 0:
            known = next((k for k in KNOWN_ISSUES if f"known issue ({k[1]}): {k[0]}" in out), None)
        if known is not None:
            total["known"][known[0]] = total["known"].get(known[0], 0) + 1
            rc = 0
        if rc != 0:
            failures += 1
            print(f"FAILURE replaying {name}: {describe_rc(rc, out)}\n  call: {line}\n{out[-3000:]}")
    print(f"fuzz_ops: replayed {len(names)} saved call(s) from {folder}")
    return failures


def parent(args):
    start = time.monotonic()
    total = {"examples": 0, "outcomes": {}, "runtime_errors": {}, "known": {}}
    batch = 0
    rnd = random.Random()
    failures = replay_regressions(args.regressions, total) if args.regressions else 0
    if failures and not args.keep_going:
        return 1
    while True:
        if args.seconds is not None:
            if time.monotonic() - start >= args.seconds:
                break
            seed = rnd.randrange(2**32)
        else:
            if batch * args.batch >= args.examples:
                break
            seed = args.seed + batch
        n = args.batch if args.seconds is not None else min(args.batch, args.examples - batch * args.batch)
        rc, out, lines, stats = run_batch(seed, n, args.batch_timeout)
        batch += 1
        if stats:
            total["examples"] += stats["examples"]
            for k, v in stats["outcomes"].items():
                total["outcomes"][k] = total["outcomes"].get(k, 0) + v
            for key in ("runtime_errors", "known"):
                for k, v in stats[key].items():
                    total[key][k] = total[key].get(k, 0) + v
        last = next((line for line in reversed(lines) if line != "DONE"), None)
        if crashed(rc, out) and last is not None:
            known = known_issue(last, f"crash: {describe_rc(rc, out)}")
            if known is not None:
                total["known"][known[0]] = total["known"].get(known[0], 0) + 1
                print(f"known issue in batch {batch} (seed {seed}): {describe_rc(rc, out)} in {last}")
                rc = 0
        if rc != 0:
            failures += 1
            print(f"FAILURE in batch {batch} (seed {seed}): {describe_rc(rc, out)}")
            if isinstance(rc, int) and rc > 0 and not crashed(rc, out) and "AssertionError" in out:
                print("  a call raised what Tessera does not raise on purpose (see the output below)")
            elif last is not None:
                print(f"  the call in flight: {last}")
                print(f"  reproduce: {sys.executable} {os.path.abspath(__file__)} --replay {last!r}")
            print("---- child output (tail) ----")
            print(out[-6000:])
            print("-----------------------------")
            if not args.keep_going:
                break
    elapsed = time.monotonic() - start
    print(f"fuzz_ops: {total['examples']} calls in {batch} batch(es), {elapsed:.0f} s; outcomes: "
          + ", ".join(f"{k} {v}" for k, v in sorted(total["outcomes"].items())))
    if total["runtime_errors"]:
        print("RuntimeError messages seen (review: Tessera raises RuntimeError only for unavailable devices, "
              "plugin and internal errors):")
        for k, v in sorted(total["runtime_errors"].items(), key=lambda kv: -kv[1])[:20]:
            print(f"  {v:5d}  {k}")
    for why, owner, _ in KNOWN_ISSUES:
        if why in total["known"]:
            print(f"known open issue hit {total['known'][why]} time(s) ({owner}): {why}")
    return 1 if failures else 0


def parse_call(line):
    return eval(line, {"T": T, "nan": float("nan"), "inf": float("inf")})  # noqa: S307 - our own log line


def replay(line):
    call = parse_call(line)
    print("replaying:", format_call(call))
    print("outcome:", run_call(call))


def child_call(line):
    """One saved call, judged like a fuzzed one: exit 0 (fine or a known issue), 1 (a finding)."""
    import tessera  # noqa: F401
    limit_memory()
    try:
        print("outcome:", run_call(parse_call(line)))
    except Finding as f:
        known = known_issue(line, str(f))
        if known is None:
            print(f"FINDING: {f}")
            return 1
        print(f"known issue ({known[1]}): {known[0]}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=300, help="examples in all (fixed seeds)")
    ap.add_argument("--seconds", type=float, default=None, help="run batches with random seeds for this long")
    ap.add_argument("--seed", type=int, default=0, help="seed of the first batch (fixed-seed mode)")
    ap.add_argument("--batch", type=int, default=100, help="examples per child process")
    ap.add_argument("--batch-timeout", type=float, default=600, help="seconds a batch may take")
    ap.add_argument("--keep-going", action="store_true", help="continue after a failing batch")
    ap.add_argument("--replay", metavar="LOGLINE", help="make one logged call in this process")
    ap.add_argument("--regressions", metavar="DIR", help="first make the calls saved in DIR, one child each")
    ap.add_argument("--child-call", metavar="LOGLINE", help=argparse.SUPPRESS)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--log", help=argparse.SUPPRESS)
    ap.add_argument("--stats", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.replay:
        replay(args.replay)
        return 0
    if args.child_call:
        faulthandler.enable()
        return child_call(args.child_call)
    if args.child:
        faulthandler.enable()
        child(args)
        return 0
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
