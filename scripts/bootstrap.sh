#!/usr/bin/env bash
# Installs what the build needs and is missing: Debian packages through apt-get,
# Python packages into ./.venv through pip. Safe to run again: it only acts on
# what is absent, so a warm machine pays a few dpkg queries.
#
#   scripts/bootstrap.sh [DEBIAN_PACKAGE...]   also installs these (scripts/fuzz.sh: clang, ...)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

debs=(cmake ninja-build ccache g++ pkg-config python3 python3-venv
      libboost-dev libgtest-dev libgmock-dev libbenchmark-dev libopenblas-dev libopenblas-openmp-dev libsleef-dev libdnnl-dev
      libzip-dev abigail-tools clang libc++-dev libc++abi-dev "$@")
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Python venv: DLPack 1.x headers come from PyPI (Debian's libdlpack-dev is 0.6).
venv="$root/.venv"
req="$root/tools/requirements.txt"
stamp="$venv/.requirements.sha256"
if [ ! -x "$venv/bin/python3" ]; then
  echo "bootstrap: creating $venv"
  python3 -m venv "$venv"
fi
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "bootstrap: installing Python packages from tools/requirements.txt"
  "$venv/bin/python3" -m pip install -q --disable-pip-version-check -r "$req"
  echo "$want" > "$stamp"
fi
