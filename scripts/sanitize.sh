#!/usr/bin/env bash
# Builds a sanitizer preset and runs its tests (docs/testing.md).
#
#   scripts/sanitize.sh asan [ctest options...]   the `debug` preset (ASan + UBSan, build/debug):
#                                                 the whole suite, Python tests included
#   scripts/sanitize.sh tsan [ctest options...]   the `tsan` preset (ThreadSanitizer, build/tsan):
#                                                 the threaded tests (names with Thread or Concurrent)
#                                                 and the allocator, stream and sim suites whole
#
# UBSan halts on the first report and TSan on the first race (the test presets
# set UBSAN_OPTIONS / TSAN_OPTIONS), so any report fails its test. Under TSan,
# OpenMP and OpenBLAS run one thread (OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1):
# their runtimes are not instrumented, so TSan cannot see their synchronization.
# The Python tests do not run under TSan (CPython is not instrumented either).
# Builds use CMAKE_BUILD_PARALLEL_LEVEL jobs; a first debug build takes long.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
kind="${1:-}"
case "$kind" in
  asan) preset=debug ;;
  tsan) preset=tsan ;;
  *) echo "usage: scripts/sanitize.sh asan|tsan [ctest options...]" >&2; exit 2 ;;
esac
shift
"$root/scripts/bootstrap.sh"
binary_dir="build/$preset"
if [ ! -f "$binary_dir/build.ninja" ]; then
  cmake --preset "$preset"
fi
cmake --build --preset "$preset"
ctest --preset "$preset" "$@"
