#!/usr/bin/env bash
# Installs the build into a scratch prefix, builds sdk/example against it with
# find_package(Tessera) as an outside project would, and runs it: the installed
# `tessera info` must list the example plugin, and toy_demo must compute on it.
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
grep -q "^plugin cpu " "$work/info.txt" || { cat "$work/info.txt"; exit 1; }
TESSERA_PLUGIN_PATH="$work/prefix/lib/tessera/plugins" "$work/example/toy_demo" "$plugin"
echo "installed package, out-of-tree plugin and program: ok"
