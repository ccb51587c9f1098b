#!/usr/bin/env python3
"""Checks that a plugin binary runs on any x86-64: outside the AVX2 and AVX-512
kernel compilations (functions whose names hold isa_avx2 or isa_avx512, see
plugins/cpu/src/isa.hpp), no function uses an
instruction a baseline x86-64 (SSE2) lacks. Such an instruction there means the
linker kept an AVX copy of a function shared by the compilations (an inline
function outside the level namespaces), which would crash a CPU without AVX on
its first call. The compiler's clones (.isra, .constprop, .part, .cold) are
skipped: each is local to its object file, so an AVX object's clones are called
only from that object's kept code, the isa_ functions or shared functions this
check covers. (The plugin's version script makes every symbol local, so the
symbol table cannot tell clones from shared functions.)

  check_isa_code.py OBJDUMP PLUGIN.so [PLUGIN.so ...]
  check_isa_code.py OBJDUMP --self-test CXX   links a library of two compilations
      of one inline function, AVX2's first then baseline's first, and checks
      that the first is refused and the second passes (the check can fail)

Exits 0 when every binary is clean, 1 listing the offending functions, 2 when
a binary cannot be checked (no symbol table, objdump failing)."""
import re
import subprocess
import sys

VARIANT = re.compile(r"isa_avx(2|512)")  # demangled or not (objdump leaves some mangled)
HEADER = re.compile(r"^[0-9a-f]+ <(.*)>:$")
CLONE = re.compile(r"\[clone \.|\.(isra|constprop|part|cold)\.?\d*")
INSN = re.compile(r"^\s+[0-9a-f]+:\s+(\S+)\s*(.*)$")
# VEX/EVEX-encoded instructions (objdump spells them with a leading v), the
# wide and mask registers, and the x86-64-v2/v3 scalar extensions. tzcnt is
# left out: GCC emits `rep bsf` for baseline, which objdump prints as tzcnt.
NEEDS_MORE = {"andn", "bextr", "blsi", "blsmsk", "blsr", "bzhi", "mulx", "pdep", "pext", "rorx",
              "sarx", "shlx", "shrx", "lzcnt", "popcnt", "movbe"}
WIDE_REG = re.compile(r"%(ymm|zmm)\d+|%k[0-7]\b")


def offending(mnemonic, operands):
    if mnemonic.startswith("v") and mnemonic not in ("verr", "verw"):
        return True
    return mnemonic in NEEDS_MORE or WIDE_REG.search(operands) is not None


def check(objdump, path):
    symbols = subprocess.run([objdump, "-t", path], capture_output=True, text=True)
    if symbols.returncode != 0 or " F .text" not in symbols.stdout:
        print(f"{path}: no symbol table (stripped?); check the build tree's binary", file=sys.stderr)
        return None
    # Read line by line: a kernel plugin's listing is over a gigabyte of text,
    # which held whole (about 2.8 GB of Python memory) competed with the tests
    # running next to this one.
    bad = {}
    functions = 0
    current = None
    with subprocess.Popen([objdump, "-d", "-C", "--no-show-raw-insn", "-j", ".text", path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as dump:
        for line in dump.stdout:
            m = HEADER.match(line)
            if m:
                current = None if CLONE.search(m.group(1)) else m.group(1)
                functions += 1
                continue
            m = INSN.match(line)
            if m and current is not None and not VARIANT.search(current) and offending(m.group(1), m.group(2)):
                bad.setdefault(current, f"{m.group(1)} {m.group(2)}".strip())
        err = dump.stderr.read()
    if dump.returncode != 0:
        print(f"{path}: {objdump} failed: {err.strip()}", file=sys.stderr)
        return None
    if functions == 0:
        print(f"{path}: objdump listed no functions", file=sys.stderr)
        return None
    return functions, bad


SELF_TEST_SOURCE = r"""
#include <vector>
[[gnu::noinline]] inline float shared_sum(const std::vector<float>& v) {  // outside any isa_ namespace
  float s = 0;
  for (float x : v) s += x * x;
  return s;
}
namespace LEVEL { float entry(const std::vector<float>& v) { return shared_sum(v); } }
"""


def self_test(objdump, cxx):
    import os
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "shared.cpp")
        with open(src, "w") as f:
            f.write(SELF_TEST_SOURCE)
        objs = {}
        for level, flags in (("isa_baseline", ["-march=x86-64"]), ("isa_avx2", ["-march=x86-64-v3"])):
            objs[level] = os.path.join(tmp, level + ".o")
            subprocess.run([cxx, "-O2", "-fPIC", "-c", src, "-o", objs[level], f"-DLEVEL={level}"] + flags,
                           check=True)
        results = {}
        for first, second in (("isa_avx2", "isa_baseline"), ("isa_baseline", "isa_avx2")):
            lib = os.path.join(tmp, f"lib_{first}_first.so")
            subprocess.run([cxx, "-shared", "-o", lib, objs[first], objs[second]], check=True)
            result = check(objdump, lib)
            if result is None:
                return 2
            results[first] = "shared_sum" in " ".join(result[1])
        if results == {"isa_avx2": True, "isa_baseline": False}:
            print("self-test: the AVX2 copy kept first is refused; the baseline copy kept first passes")
            return 0
        print(f"self-test failed: shared_sum flagged with AVX2 first: {results['isa_avx2']}, "
              f"with baseline first: {results['isa_baseline']}")
        return 1


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[2] == "--self-test" and len(sys.argv) == 4:
        return self_test(sys.argv[1], sys.argv[3])
    objdump, paths = sys.argv[1], sys.argv[2:]
    status = 0
    for path in paths:
        result = check(objdump, path)
        if result is None:
            return 2
        functions, bad = result
        if bad:
            status = 1
            print(f"{path}: {len(bad)} function(s) outside isa_avx2/isa_avx512 need more than baseline x86-64:")
            for name, insn in sorted(bad.items())[:40]:
                print(f"  {name}\n      first: {insn}")
        else:
            print(f"{path}: {functions} functions; every one outside the AVX compilations is baseline x86-64")
    return status


if __name__ == "__main__":
    sys.exit(main())
