#!/usr/bin/env bash
# Configures (once) and builds the `release` preset. Used by demo.sh and test.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# ccache keys with paths relative to the checkout and without the working
# directory, so another clone of the repository (CI's) reuses this cache.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
"$root/scripts/bootstrap.sh"
if [ ! -f build/release/build.ninja ]; then
  cmake --preset release
fi
cmake --build --preset release
