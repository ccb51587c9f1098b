#!/usr/bin/env bash
# Gathers, on the development machine, what building and testing Tessera needs
# beyond what a GPU machine has (the CUDA toolkit, CMake, Ninja, a C++
# compiler and a Python 3.12 with PyTorch, CuPy, JAX, NumPy, nanobind and
# scikit-build-core; no network) into one folder to carry along (docs/cuda.md):
#
#   boost/      the Boost headers the sources reach, and a CMake package for them
#   googletest/ GoogleTest's sources (built there)
#   openblas/   OpenBLAS (gzipped) with its Fortran runtime, and its headers
#   libzip/     libzip with its headers and a pkg-config file
#   sleef/      SLEEF (gzipped), the CPU plugin's vectorized math, and its header
#   dlpack/     DLPack 1.x headers
#   wheels/     pytest and hypothesis with their pure-Python dependencies
#
#   tools/gpu_kit/gather.sh [DIR]     (default: .gpukit, which git ignores)
#
# Fails when the folder would exceed 64 MiB (the limit of what travels).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-$root/.gpukit}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
"$root/scripts/bootstrap.sh" >/dev/null
rm -rf "$out"
mkdir -p "$out"
exclude="$(git -C "$root" rev-parse --git-path info/exclude)"
case "$exclude" in /*) ;; *) exclude="$root/$exclude" ;; esac
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.gpukit/' "$exclude" 2>/dev/null || echo '/.gpukit/' >>"$exclude"

# Boost: every header the sources' Boost includes reach (as g++ sees them),
# plus the configuration subtrees other compilers and platforms select from.
includes=$(grep -rhoE --include='*.cpp' --include='*.h' --include='*.hpp' --include='*.cu' '#include <boost/[^>]+>' \
             "$root/core" "$root/python" "$root/plugins" "$root/tools" "$root/tests" "$root/bench" "$root/sdk" | sort -u)
probe=$(printf '#define BOOST_DLL_USE_STD_FS 1\n%s\n' "$includes")
headers=$(printf '%s\n' "$probe" | g++ -std=c++20 -x c++ -M - | tr ' \\' '\n\n' | grep '^/usr/include/boost/' | sort -u)
mkdir -p "$out/boost/include"
(cd /usr/include && printf '%s\n' $headers | sed 's|^/usr/include/||' | xargs cp --parents -t "$out/boost/include")
(cd /usr/include && cp -r --parents boost/config boost/predef boost/detail "$out/boost/include")
cp /usr/include/boost/version.hpp "$out/boost/include/boost/"
boost_version=$(sed -n 's/^#define BOOST_LIB_VERSION "\([0-9_]*\)"/\1/p' /usr/include/boost/version.hpp | tr _ .)
mkdir -p "$out/boost/lib/cmake/Boost"
cat >"$out/boost/lib/cmake/Boost/BoostConfig.cmake" <<EOF
# Boost headers gathered by tools/gpu_kit/gather.sh: header-only targets.
get_filename_component(_tsr_boost_root "\${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(Boost_VERSION ${boost_version}.0)
set(Boost_INCLUDE_DIRS "\${_tsr_boost_root}/include")
if(NOT TARGET Boost::headers)
  add_library(Boost::headers INTERFACE IMPORTED)
  set_target_properties(Boost::headers PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "\${Boost_INCLUDE_DIRS}")
  add_library(Boost::boost ALIAS Boost::headers)
endif()
set(Boost_FOUND TRUE)
EOF
cat >"$out/boost/lib/cmake/Boost/BoostConfigVersion.cmake" <<EOF
set(PACKAGE_VERSION ${boost_version}.0)
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
EOF

# GoogleTest: Debian ships its sources.
cp -r /usr/src/googletest "$out/googletest"

# OpenBLAS (the OpenMP build the CPU plugin uses: one thread pool with its kernels) with
# the Fortran runtime it links, and the CBLAS headers. libgomp comes with the machine's gcc.
mkdir -p "$out/openblas/lib" "$out/openblas/include"
blas=/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0
gzip -9 -c "$blas" >"$out/openblas/lib/libopenblas.so.0.gz"
for dep in libgfortran.so.5 libquadmath.so.0; do
  cp -L "$(ldd "$blas" | awk -v d="$dep" '$1 == d {print $3}')" "$out/openblas/lib/$dep"
done
cp /usr/include/x86_64-linux-gnu/openblas-openmp/{cblas.h,openblas_config.h} "$out/openblas/include/"

# SLEEF (the CPU plugin's transcendental functions) and its header.
mkdir -p "$out/sleef/lib" "$out/sleef/include"
gzip -9 -c /usr/lib/x86_64-linux-gnu/libsleef.so.3 >"$out/sleef/lib/libsleef.so.3.gz"
cp /usr/include/x86_64-linux-gnu/sleef.h "$out/sleef/include/"

# libzip with its headers and a pkg-config file (prefix set where it is unpacked).
mkdir -p "$out/libzip/lib/pkgconfig" "$out/libzip/include"
cp -L /usr/lib/x86_64-linux-gnu/libzip.so.4 "$out/libzip/lib/"
cp /usr/include/zip.h "$out/libzip/include/"
cp "$(find /usr/include /usr/lib -name zipconf.h | head -1)" "$out/libzip/include/"
zip_version=$(pkg-config --modversion libzip)
cat >"$out/libzip/lib/pkgconfig/libzip.pc" <<EOF
prefix=@PREFIX@
libdir=\${prefix}/lib
includedir=\${prefix}/include
Name: libzip
Description: gathered by tools/gpu_kit/gather.sh
Version: ${zip_version}
Libs: -L\${libdir} -lzip
Cflags: -I\${includedir}
EOF

# DLPack 1.x headers (from the PyPI package the build uses here).
dl=$("$root/.venv/bin/python3" -c "import tvm_ffi.libinfo as l; print(l.find_dlpack_include_path())")
mkdir -p "$out/dlpack/include"
cp -r "$dl/dlpack" "$out/dlpack/include/"

# The test runner's Python packages, as wheels (pure Python).
mkdir -p "$out/wheels"
# The GPU machine's Python is 3.12: wheels for it (pure Python, or manylinux x86-64).
"$root/.venv/bin/python3" -m pip download -q --no-deps --only-binary=:all: -d "$out/wheels" \
  --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 pytest pluggy iniconfig packaging hypothesis attrs sortedcontainers

# A manifest, and the size limit.
{
  echo "gathered $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "boost ${boost_version} ($(printf '%s\n' $headers | wc -l) headers reached)"
  echo "openblas $(dpkg-query -W -f='${Version}' libopenblas0-openmp 2>/dev/null || echo '?')"
  echo "libzip ${zip_version}"
  echo "sleef $(dpkg-query -W -f='${Version}' libsleef3 2>/dev/null || echo '?')"
  echo "dlpack $(sed -n 's/^#define DLPACK_MAJOR_VERSION \([0-9]*\)/\1/p' "$dl/dlpack/dlpack.h").$(sed -n 's/^#define DLPACK_MINOR_VERSION \([0-9]*\)/\1/p' "$dl/dlpack/dlpack.h")"
  echo "googletest $(dpkg-query -W -f='${Version}' googletest 2>/dev/null || echo '?')"
  ls "$out/wheels"
} >"$out/MANIFEST"
kib=$(du -sk "$out" | cut -f1)
echo "gather: $out holds $((kib / 1024)) MiB"
if [ "$kib" -gt $((64 * 1024)) ]; then
  echo "gather: over the 64 MiB that may travel" >&2
  exit 1
fi
