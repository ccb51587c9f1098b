"""The CPU plugin's instruction-set levels as the tests see them: which ones
this CPU can run (the flags plugins/cpu/src/isa_dispatch.cpp requires) and which
ones this build has (tests/python/CMakeLists.txt passes TSRTEST_CPU_LEVELS)."""
import os
import platform

ALL_LEVELS = ["baseline", "avx2", "avx512"]
# /proc/cpuinfo flags each level needs beyond the one below it.
NEEDS = {"avx2": {"avx2", "fma", "f16c", "bmi1", "bmi2", "popcnt"},
         "avx512": {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}}


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_levels():
    """The levels this CPU runs, lowest first."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return ["baseline"]
    flags = cpu_flags()
    levels = ["baseline"]
    for level in ("avx2", "avx512"):
        if not NEEDS[level] <= flags:
            break
        levels.append(level)
    return levels


def built_levels():
    """TESSERA_CPU_LEVELS of this build."""
    return os.environ.get("TSRTEST_CPU_LEVELS", ",".join(ALL_LEVELS)).split(",")


def supported_levels():
    """The levels that can run here: this CPU's that the build has, lowest first."""
    return [lv for lv in cpu_levels() if lv in built_levels()]
