#!/usr/bin/env bash
# Configures (once) and builds the `release` preset. Used by demo.sh and test.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
"$root/scripts/bootstrap.sh"
if [ ! -f build/release/build.ninja ]; then
  cmake --preset release
fi
cmake --build --preset release
