#!/usr/bin/env bash
# Quick start, command 1: install what is missing, build, run the `tessera demo`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/build.sh"
exec "$root/build/release/bin/tessera" demo "$@"
