#!/usr/bin/env bash
# Compile-checks CUDA plugin sources for one architecture (sm_90) without the
# build system, so several files can be checked while a build runs:
#   tools/cuda_check.sh plugins/cuda/src/unary.cu [more.cu ...]
# Objects go to a temporary folder and are thrown away. Needs the release
# build's configure step (for the DLPack include path) and nvcc.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nvcc="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
dlpack="$("$root/.venv/bin/python3" -c 'import tvm_ffi.libinfo as l; print(l.find_dlpack_include_path())' 2>/dev/null || echo /usr/include)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
status=0
for f in "$@"; do
  echo "== $f"
  "$nvcc" -I"$root/sdk/include" -I"$root/abi/include" -isystem "$dlpack" -O2 -std=c++17 \
    --generate-code=arch=compute_90,code=sm_90 -Xcompiler=-fPIC -Xcompiler=-fvisibility=hidden \
    --extended-lambda --expt-relaxed-constexpr -Xcudafe --display_error_number \
    ${CUDA_CHECK_FLAGS:-} -x cu -c "$f" -o "$out/$(basename "$f").o" || status=1
done
exit $status
