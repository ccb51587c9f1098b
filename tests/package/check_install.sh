#!/usr/bin/env bash
# Installs the build into a scratch prefix and builds both examples against it
# as outside projects would: sdk/example (C++, find_package(Tessera)) and
# sdk/example_c (C99, find_package(Tessera COMPONENTS sdk) with Boost made
# unfindable: a plugin-only project needs neither Boost nor libtessera). Each
# plugin exports one symbol, `tessera info` lists it and the op it defines,
# toy_demo computes on the toy device and checks toy::fused_gelu and its
# gradients, cdev_demo does the same for the C plugin's cdev::axpby, and the
# installed tessera-plugin-test passes on both plugins.
set -euo pipefail
build="$1" src="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
cmake -S "$src/sdk/example" -B "$work/example" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/example" > "$work/build.log"
plugin="$work/example/libtessera-toy.so"
exports=$(nm -D --defined-only "$plugin" | awk '$2 ~ /^[TtWwDdBbVvi]$/ {print $3}' | grep -v -E '^(_init|_fini|__bss_start|_edata|_end)$')
[ "$exports" = "tessera_plugin_entry" ] || { echo "toy plugin exports: $exports"; exit 1; }
TESSERA_PLUGIN_PATH="$work/prefix/lib/tessera/plugins:$plugin" "$work/prefix/bin/tessera" info > "$work/info.txt"
# The ABI version of the installed headers the toy plugin was built with.
minor=$(sed -n 's/^#define TSR_ABI_VERSION_MINOR \([0-9][0-9]*\).*/\1/p' "$work/prefix/include/tessera/abi.h")
grep -q "^plugin toy 0.1.0 (ABI 1.$minor)" "$work/info.txt" || { cat "$work/info.txt"; exit 1; }
grep -A1 "\[toy\] float32, float64:" "$work/info.txt" | grep -qw "add" || { cat "$work/info.txt"; exit 1; }
# The op it defines (ABI 1.3), with its in-place variant and its derivative.
grep -q "^    toy::fused_gelu(Tensor self) -> Tensor$" "$work/info.txt" || { cat "$work/info.txt"; exit 1; }
grep -q "in-place variant toy::fused_gelu_" "$work/info.txt" || { cat "$work/info.txt"; exit 1; }
grep -q "^plugin cpu " "$work/info.txt" || { cat "$work/info.txt"; exit 1; }
TESSERA_PLUGIN_PATH="$work/prefix/lib/tessera/plugins" "$work/example/toy_demo" "$plugin"

# The C99 example: the sdk component alone, with Boost hidden from CMake.
cmake -S "$src/sdk/example_c" -B "$work/example_c" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_DISABLE_FIND_PACKAGE_Boost=ON > "$work/configure_c.log"
cmake --build "$work/example_c" > "$work/build_c.log"
cplugin="$work/example_c/libtessera-cdev.so"
exports=$(nm -D --defined-only "$cplugin" | awk '$2 ~ /^[TtWwDdBbVvi]$/ {print $3}' | grep -v -E '^(_init|_fini|__bss_start|_edata|_end)$')
[ "$exports" = "tessera_plugin_entry" ] || { echo "cdev plugin exports: $exports"; exit 1; }
if readelf -d "$cplugin" | grep -q 'libtessera'; then echo "cdev plugin links libtessera"; exit 1; fi
TESSERA_PLUGIN_PATH="$work/prefix/lib/tessera/plugins:$cplugin" "$work/prefix/bin/tessera" info > "$work/info_c.txt"
grep -q "^plugin cdev 0.1.0 (ABI 1.$minor)" "$work/info_c.txt" || { cat "$work/info_c.txt"; exit 1; }
grep -q "^    cdev::axpby(Tensor x, Tensor y, \*, float alpha=1.0, float beta=1.0) -> Tensor$" "$work/info_c.txt" ||
  { cat "$work/info_c.txt"; exit 1; }
# The C++ example's cdev_demo calls the C plugin's op and checks its gradients.
TESSERA_PLUGIN_PATH="$work/prefix/lib/tessera/plugins" "$work/example/cdev_demo" "$cplugin"

# Both examples pass the conformance kit, as their authors would run it: the
# kernels (their ops' included, --mode test), then the gradients on the device (--mode grad).
for p in "$plugin" "$cplugin"; do
  for mode in test grad; do
    report="$work/kit_$(basename "$p" .so)_$mode.txt"
    TESSERA_PLUGIN_PATH="$work/prefix/lib/tessera/plugins" "$work/prefix/bin/tessera-plugin-test" "$p" --mode "$mode" \
      > "$report" || { tail -30 "$report"; exit 1; }
    tail -1 "$report"
  done
done
echo "installed package, two out-of-tree plugins (C++ and C99), their ops and two programs: ok"
