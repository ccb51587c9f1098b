#!/usr/bin/env bash
# Builds and checks Tessera on a GPU machine from this checkout and the folder
# tools/gpu_kit/gather.sh made (docs/cuda.md), and writes one report:
#
#   tools/gpu_kit/run.sh [KIT] [REPORT_DIR]     (defaults: .gpukit, $OUT or ./gpu-report)
#
# Settings (environment): TESSERA_GPU_WORK (scratch folder, /tmp/tessera-gpu),
# TESSERA_GPU_CXX (the C++ compiler; default the first of $CXX, c++, g++,
# /usr/bin/g++ that links libstdc++ as a shared library),
# TESSERA_GPU_JOBS (build and test jobs, all cores), TESSERA_GPU_PYTHON (the
# interpreter whose packages the tests use, python3), TESSERA_GPU_CUDA (ON),
# TESSERA_GPU_STEPS (the steps to run, by name, space-separated; default all:
# a device command runs at most 10 minutes, so a lease can run the steps in
# several calls, the build first — the work folder stays while the machine does).
#
# Steps, each timed and logged, none stopping the others:
#   deps     unpack the kit; build GoogleTest from its sources
#   python   the test runner's wheels (pytest, hypothesis) for the machine's python3
#   build    configure (every dependency from the kit) and build, CUDA plugin on
#   isolation  no header or library of those came from elsewhere
#   cuda     the CUDA tests alone (names with Cuda or cuda)
#   kit      tessera-plugin-test on the CUDA plugin: test, grad, coverage modes
#   sanitize the CUDA tests under compute-sanitizer memcheck and racecheck
#   bench    tessera_bench_cuda and bench/bench_cuda_vs_torch.py
#   interop  the Python tests (tests/python; interop with PyTorch, CuPy, JAX)
#   suite    the whole test suite (ctest)
# The report folder gets at most 8 files: report.md and the logs of the steps
# that produce results. Exit status: 0 when every step passed.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
kit="${1:-$root/.gpukit}"
report="${2:-${OUT:-$root/gpu-report}}"
case "$kit" in /*) ;; *) kit="$PWD/$kit" ;; esac
work="${TESSERA_GPU_WORK:-/tmp/tessera-gpu}"
jobs="${TESSERA_GPU_JOBS:-$(nproc)}"
mkdir -p "$report" "$work"
summary="$report/report.md"
{
  echo "# Tessera on $(hostname): $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo '```'
  (nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || echo "no nvidia-smi") | head -4
  (nvcc --version 2>&1 | tail -2) || echo "no nvcc"
  echo "cmake $(cmake --version | head -1 | cut -d' ' -f3), ninja $(ninja --version 2>/dev/null), $(c++ --version | head -1)"
  echo "python $(python3 --version 2>&1 | cut -d' ' -f2), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
  [ -f "$kit/MANIFEST" ] && cat "$kit/MANIFEST" | head -6
  echo '```'
  echo
  echo "| step | result | seconds |"
  echo "|---|---|---|"
} >"$summary"

failed=0
# step NAME LOG COMMAND...: runs the command with output in LOG, records the result.
steps="${TESSERA_GPU_STEPS:-all}"
step() {
  local name="$1" log="$2"
  shift 2
  if [ "$steps" != all ] && ! [[ " $steps " == *" ${name%%-*} "* ]]; then return 0; fi
  local t0=$SECONDS
  echo "== $name: $*" | tee -a "$log"
  if "$@" >>"$log" 2>&1; then
    echo "| $name | ok | $((SECONDS - t0)) |" >>"$summary"
  else
    echo "| $name | FAILED (exit $?; see $(basename "$log")) | $((SECONDS - t0)) |" >>"$summary"
    failed=1
  fi
}

deps="$work/deps"
unpack() {
  # Once per kit: a second run (same lease) keeps the unpacked tree and its timestamps.
  if [ -f "$deps/.unpacked" ] && cmp -s "$deps/.unpacked" "$kit/MANIFEST"; then
    echo "kit already unpacked in $deps"
    return 0
  fi
  rm -rf "$deps" && mkdir -p "$deps" && cp -r "$kit"/. "$deps"/ &&
    gunzip -f "$deps/openblas/lib/libopenblas.so.0.gz" &&
    ln -sf libopenblas.so.0 "$deps/openblas/lib/libopenblas.so" &&
    gunzip -f "$deps/sleef/lib/libsleef.so.3.gz" &&
    ln -sf libsleef.so.3 "$deps/sleef/lib/libsleef.so" &&
    ln -sf libzip.so.4 "$deps/libzip/lib/libzip.so" &&
    sed -i "s|@PREFIX@|$deps/libzip|" "$deps/libzip/lib/pkgconfig/libzip.pc" &&
    cmake -S "$deps/googletest" -B "$work/gtest-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$deps/gtest" -DCMAKE_POSITION_INDEPENDENT_CODE=ON &&
    cmake --build "$work/gtest-build" -j "$jobs" && cmake --install "$work/gtest-build" &&
    cp "$kit/MANIFEST" "$deps/.unpacked"
}
step deps "$report/build.log" unpack

# pytest and hypothesis for the machine's python3, in a venv that sees its packages (torch, cupy, jax).
base_py="$(command -v "${TESSERA_GPU_PYTHON:-python3}")"
py="$work/venv/bin/python3"
python_env() {
  if "$base_py" -c "import pytest, hypothesis" 2>/dev/null; then
    py="$base_py"  # it has the runner already (a development machine's .venv)
  else
    rm -rf "$work/venv" && "$base_py" -m venv --system-site-packages "$work/venv" &&
      "$py" -m pip install -q --no-index --no-deps "$deps"/wheels/*.whl
  fi &&
    "$py" -c "import pytest, hypothesis, numpy; print('pytest', pytest.__version__, 'numpy', numpy.__version__)" &&
    "$py" -m nanobind --cmake_dir
}
step python "$report/build.log" python_env
[ -x "$py" ] || py="$base_py"  # the python step skipped here: the runner the machine has

export LD_LIBRARY_PATH="$deps/openblas/lib:$deps/libzip/lib:$deps/sleef/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Only the kit's pkg-config files: nothing of the machine's own is picked up by accident.
export PKG_CONFIG_LIBDIR="$deps/libzip/lib/pkgconfig"
build="$work/build"
# The first C++ compiler that links libstdc++ as a shared library
# (core/cmake/shared_cxx_runtime.cmake refuses one that links it statically;
# one GPU machine's default g++ wrapper did).
shared_runtime() {
  printf '#include <sstream>\n#include <string>\nstd::string f(int v) { std::ostringstream s; s << v; return s.str(); }\n' \
    >"$work/probe.cpp" &&
    "$1" -shared -fPIC -o "$work/probe.so" "$work/probe.cpp" 2>/dev/null &&
    objdump -p "$work/probe.so" | grep -qE 'NEEDED +libstdc\+\+\.so'
}
cxx=""
for c in ${TESSERA_GPU_CXX:-} ${CXX:-} c++ g++ /usr/bin/g++; do
  if command -v "$c" >/dev/null && shared_runtime "$(command -v "$c")"; then cxx="$(command -v "$c")"; break; fi
done
configure_and_build() {
  echo "C++ compiler: ${cxx:-as CMake finds it, since none of TESSERA_GPU_CXX, CXX, c++, g++, /usr/bin/g++ links libstdc++.so}"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    ${cxx:+-DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CUDA_HOST_COMPILER="$cxx"} \
    -DCMAKE_PREFIX_PATH="$deps/boost;$deps/gtest" -DBoost_DIR="$deps/boost/lib/cmake/Boost" \
    -DCMAKE_POLICY_DEFAULT_CMP0167=NEW -DBoost_NO_SYSTEM_PATHS=ON \
    -DTESSERA_OPENBLAS_LIBRARY="$deps/openblas/lib/libopenblas.so" \
    -DTESSERA_CBLAS_INCLUDE_DIR="$deps/openblas/include" \
    -DTESSERA_SLEEF_LIBRARY="$deps/sleef/lib/libsleef.so" -DTESSERA_SLEEF_INCLUDE_DIR="$deps/sleef/include" \
    -DTESSERA_DLPACK_INCLUDE_DIR="$deps/dlpack/include" -DTESSERA_PYTHON="$py" \
    -DTESSERA_BUILD_BENCHMARKS=OFF -DTESSERA_CUDA="${TESSERA_GPU_CUDA:-ON}" \
    -DTESSERA_CUDNN_ROOT="$("$py" -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null)" &&
    grep -E '^(Boost_DIR|GTest_DIR|TESSERA_OPENBLAS_LIBRARY|TESSERA_DLPACK_INCLUDE_DIR|TSR_LIBZIP_LIBDIR)' \
      "$build/CMakeCache.txt" &&
    cmake --build "$build" -j "$jobs"
}
step build "$report/build.log" configure_and_build

# Nothing of the machine's own Boost, GoogleTest, OpenBLAS, SLEEF or libzip was used
# (on a development machine that has them: proof the kit is complete).
isolation() {
  local outside
  outside=$(ninja -C "$build" -t deps | grep -E '^ +/usr/(local/)?include/(boost/|gtest/|gmock/|zip\.h|zipconf\.h|cblas\.h|x86_64-linux-gnu/openblas|x86_64-linux-gnu/sleef\.h)' | sort -u)
  [ -z "$outside" ] || { echo "headers from outside the kit:"; echo "$outside" | head; return 1; }
  for lib in "$build"/lib/tessera/plugins/libtessera-cpu.so "$build"/lib/libtessera.so; do
    ldd "$lib" | grep -E 'libopenblas|libzip|libgfortran|libsleef' | grep -v "$deps" && { echo "$lib resolves outside the kit"; return 1; }
  done
  # The link itself named the kit's libzip by path (a bare -lzip would find a machine's own, or none).
  ninja -C "$build" -t commands lib/libtessera.so | tail -1 | grep -qF "$deps/libzip/lib/libzip.so" ||
    { echo "libtessera.so was not linked against $deps/libzip/lib/libzip.so"; return 1; }
  echo "every Boost, GoogleTest, OpenBLAS, SLEEF and libzip file came from $deps"
}
step isolation "$report/build.log" isolation

export TESSERA_PLUGIN_PATH="$build/lib/tessera/plugins"
step cuda "$report/cuda.log" ctest --test-dir "$build" -R '[Cc]uda' --no-tests=error --output-on-failure --timeout 900
cuda_plugin="$TESSERA_PLUGIN_PATH/libtessera-cuda.so"
step kit "$report/kit.log" "$build/bin/tessera-plugin-test" "$cuda_plugin"
step kit-grad "$report/kit.log" "$build/bin/tessera-plugin-test" "$cuda_plugin" --mode grad
step kit-coverage "$report/kit.log" "$build/bin/tessera-plugin-test" "$cuda_plugin" --mode coverage
sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
# Without the out-of-memory test: its cudaMalloc fails on purpose, and memcheck counts that API error.
step sanitize-memcheck "$report/sanitize.log" "$sanitizer" --tool memcheck --error-exitcode 1 "$build/bin/tessera_cuda_tests" \
  --gtest_filter=-CudaMemory.OutOfMemoryOnTheRealDeviceIsAClearErrorAndTheDeviceRecovers
step sanitize-racecheck "$report/sanitize.log" "$sanitizer" --tool racecheck --error-exitcode 1 "$build/bin/tessera_cuda_tests"
step bench "$report/bench.log" "$build/bin/tessera_bench_cuda"
# -X faulthandler: a crash in native code still names the Python line (the first run's did).
step bench-torch "$report/bench.log" env PYTHONPATH="$build/python" PYTHONUNBUFFERED=1 "$py" -X faulthandler \
  "$root/bench/bench_cuda_vs_torch.py"
step interop "$report/interop.log" env PYTHONPATH="$build/python" "$py" -X faulthandler -m pytest -q "$root/tests/python" -q
step suite "$report/suite.log" ctest --test-dir "$build" -j "$jobs" --output-on-failure --timeout 900

{
  echo
  echo "Logs: $(cd "$report" && ls | grep -v report.md | tr '\n' ' ')"
  echo
  echo "## Test suite (tail)"
  echo '```'
  tail -15 "$report/suite.log" 2>/dev/null
  echo '```'
  echo "## CUDA tests (tail)"
  echo '```'
  tail -8 "$report/cuda.log" 2>/dev/null
  echo '```'
  echo "## Benchmarks"
  grep -E '^[|#]' "$report/bench.log" 2>/dev/null
  echo "## Conformance kit on the CUDA plugin (tail)"
  echo '```'
  grep -E '^[0-9]+ checks|^FAIL [a-z_.]+\(' "$report/kit.log" 2>/dev/null | head -40
  echo '```'
} >>"$summary"
echo "run: report in $summary"
exit "$failed"
