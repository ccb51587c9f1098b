#!/usr/bin/env bash
# Runs the fuzzers (docs/testing.md).
#
#   scripts/fuzz.sh [TARGET] [SECONDS] [-merge=1] [libFuzzer options...]
#
# TARGET: a libFuzzer target (the names of tests/fuzz/*_fuzz.cpp: dlpack, schema,
# npz, env, and plugin_file once core/src/plugin_file_check.cpp exists), `python`
# (tests/python/fuzz_ops.py on the release build), or `all` (the default: every
# libFuzzer target, then python). SECONDS: how long each target runs (default 60).
#
# A libFuzzer target starts from its committed inputs (tests/fuzz/corpus/TARGET and
# tests/fuzz/regressions/TARGET) and writes what it finds to build/fuzz/findings/
# TARGET/: new/ (inputs that reached new code) and crash-*, timeout-*, oom-*
# (failing inputs; each run's log is log.txt). -merge=1 then merges new/ into the
# committed corpus, keeping only inputs that add coverage. Other arguments go to
# libFuzzer (e.g. -jobs=2, -only_ascii=1).
#
# Installs what is missing with apt-get: clang and its libFuzzer/sanitizer
# runtimes (Debian bookworm: clang-14 through `clang`, libclang-rt-14-dev),
# OpenMP for clang (libomp-dev), llvm-symbolizer (llvm). Builds the `fuzz` preset
# (build/fuzz) with CMAKE_BUILD_PARALLEL_LEVEL jobs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

target="${1:-all}"
seconds="${2:-60}"
shift $(( $# < 2 ? $# : 2 ))
merge=0
extra=()
for a in "$@"; do
  case "$a" in
    -merge=1) merge=1 ;;
    *) extra+=("$a") ;;
  esac
done
case "$seconds" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, got '$seconds'" >&2; exit 2 ;; esac

lib_targets=()
for f in tests/fuzz/*_fuzz.cpp; do
  t="$(basename "$f" _fuzz.cpp)"
  [ "$t" = plugin_file ] && [ ! -f core/src/plugin_file_check.cpp ] && continue
  lib_targets+=("$t")
done

run_python() {
  "$root/scripts/build.sh"
  echo "fuzz.sh: python for ${seconds}s"
  PYTHONPATH="$root/build/release/python" \
  TESSERA_PLUGIN_PATH="$root/build/release/lib/tessera/plugins" \
  TESSERA_CPU_LOAD_AWARE=0 \
    "$root/.venv/bin/python" "$root/tests/python/fuzz_ops.py" --seconds "$seconds" --keep-going
}

case "$target" in
  python) run_python; exit $? ;;
  all) selected=("${lib_targets[@]}") ;;
  *)
    if [[ " ${lib_targets[*]} " != *" $target "* ]]; then
      echo "fuzz.sh: unknown target '$target' (targets: ${lib_targets[*]} python all)" >&2
      exit 2
    fi
    selected=("$target") ;;
esac

# ---- clang, libFuzzer and the sanitizer runtimes, with the build's own packages and .venv ----
"$root/scripts/bootstrap.sh" clang libclang-rt-14-dev libomp-dev llvm

# ---- build ----
if [ ! -f build/fuzz/build.ninja ]; then
  cmake --preset fuzz
fi
build_targets=(tessera_cpu tessera_meta)
for t in "${selected[@]}"; do build_targets+=("fuzz_$t"); done
cmake --build build/fuzz --target "${build_targets[@]}"

# Every library is built with -shared-libasan (plugins link with --no-undefined),
# so the ASan runtime must come first: preload it (into the fuzzers only).
asan_rt="$(clang -print-file-name=libclang_rt.asan-x86_64.so)"
symbolizer="$(command -v llvm-symbolizer || command -v llvm-symbolizer-14 || true)"
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1${symbolizer:+:external_symbolizer_path=$symbolizer}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${symbolizer:+:external_symbolizer_path=$symbolizer}"
export TESSERA_PLUGIN_PATH="$root/build/fuzz/lib/tessera/plugins"

summary=()
status=0
for t in "${selected[@]}"; do
  out="$root/build/fuzz/findings/$t"
  mkdir -p "$out/new"
  corpus="$root/tests/fuzz/corpus/$t"
  inputs=("$out/new" "$corpus")
  [ -d "$root/tests/fuzz/regressions/$t" ] && inputs+=("$root/tests/fuzz/regressions/$t")
  dict=()
  [ -f "$root/tests/fuzz/$t.dict" ] && dict=("-dict=$root/tests/fuzz/$t.dict")
  echo "fuzz.sh: $t for ${seconds}s (log: $out/log.txt)"
  rc=0
  LD_PRELOAD="$asan_rt" "$root/build/fuzz/bin/fuzz_$t" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$out/" "${dict[@]}" "${extra[@]}" "${inputs[@]}" \
      > "$out/log.txt" 2>&1 || rc=$?
  # Executions: libFuzzer's final stats, or in -fork mode its last "#N" status line.
  runs="$(grep -o 'stat::number_of_executed_units: [0-9]*' "$out/log.txt" | tail -1 | grep -o '[0-9]*$' || true)"
  [ -n "$runs" ] || runs="$(grep -oE '^#[0-9]+' "$out/log.txt" | tail -1 | tr -d '#' || true)"
  cov="$(grep -o 'cov: [0-9]* ft: [0-9]*' "$out/log.txt" | tail -1 || true)"
  if [ "$rc" -ne 0 ]; then
    status=1
    echo "fuzz.sh: $t FAILED (exit $rc); the failing input is in $out/ — the end of the log:"
    tail -n 60 "$out/log.txt"
  fi
  summary+=("$t: exit $rc, ${runs:-?} executions, ${cov:-no coverage line}")
  if [ "$merge" -eq 1 ] && [ "$rc" -eq 0 ]; then
    echo "fuzz.sh: merging $out/new into $corpus"
    LD_PRELOAD="$asan_rt" "$root/build/fuzz/bin/fuzz_$t" -merge=1 "$corpus" "$out/new" > "$out/merge.txt" 2>&1
    tail -n 1 "$out/merge.txt"
  fi
done
echo "fuzz.sh: summary"
for line in "${summary[@]}"; do echo "  $line"; done
if [ "$target" = all ]; then
  run_python || status=1
fi
exit "$status"
