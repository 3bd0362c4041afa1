#!/usr/bin/env bash
# Installs what pkb needs and is missing: Debian's C++ libraries and build tools, and
# libtorch (the torch 2.11.0 wheel from PyPI, in .venv) unless a python3 with torch is
# there already. Safe to run again: it only installs what is absent.
#   PKB_PYTHON=/path/to/python3   use this interpreter's torch instead of .venv
#   PKB_DEPS_EXTRA="pkg ..."      more Debian packages (the tests add some)
set -euo pipefail
cd "$(dirname "$0")/.."

need=(build-essential cmake pkg-config python3-venv libcli11-dev libtomlplusplus-dev nlohmann-json3-dev
      libspdlog-dev libgtest-dev libcurl4-openssl-dev ccache ${PKB_DEPS_EXTRA:-})
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "pkb: installing Debian packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

has_torch() { "$1" -c 'import torch, sys; sys.exit(0 if torch.__version__.startswith("2.11") else 1)' 2>/dev/null; }
if [ -n "${PKB_PYTHON:-}" ]; then
  has_torch "$PKB_PYTHON" || { echo "pkb: PKB_PYTHON=$PKB_PYTHON has no torch 2.11" >&2; exit 1; }
elif [ -x .venv/bin/python3 ] && has_torch .venv/bin/python3; then
  :
elif command -v python3 >/dev/null && has_torch python3; then
  echo "pkb: using $(command -v python3)'s torch"
else
  # No pip cache: the wheels with their CUDA libraries are some 3 GB that would sit there twice.
  echo "pkb: installing torch 2.11.0 (libtorch) into .venv"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check --no-cache-dir torch==2.11.0 numpy
fi
