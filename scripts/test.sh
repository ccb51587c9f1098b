#!/usr/bin/env bash
# Quick start, command 2: install what is missing, build, run every test.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/build.sh"
cd "$root"
ctest --preset release "$@"
