#!/usr/bin/env bash
# Installs what pkb needs and is missing: Debian's C++ libraries and build tools, and
# libtorch (the torch 2.11.0 wheel from PyPI, in .venv) unless a python3 with torch is
# there already. Safe to run again: it only installs what is absent. The wheel downloads
# while apt installs (both wait on the network, not on each other).
#   PKB_PYTHON=/path/to/python3   use this interpreter's torch instead of .venv
#   PKB_DEPS_EXTRA="pkg ..."      more Debian packages (the tests add some)
set -euo pipefail
cd "$(dirname "$0")/.."

sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
missing_of() {  # prints those of the named Debian packages that are not installed
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
apt_install() {
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

has_torch() { "$1" -c 'import torch, sys; sys.exit(0 if torch.__version__.startswith("2.11") else 1)' 2>/dev/null; }
want_venv=0
if [ -n "${PKB_PYTHON:-}" ]; then
  has_torch "$PKB_PYTHON" || { echo "pkb: PKB_PYTHON=$PKB_PYTHON has no torch 2.11" >&2; exit 1; }
elif [ -x .venv/bin/python3 ] && has_torch .venv/bin/python3; then
  :
elif command -v python3 >/dev/null && has_torch python3; then
  echo "pkb: using $(command -v python3)'s torch"
else
  want_venv=1
fi

need=(build-essential cmake pkg-config python3-venv libcli11-dev libtomlplusplus-dev nlohmann-json3-dev
      libspdlog-dev libgtest-dev libcurl4-openssl-dev ccache ninja-build ${PKB_DEPS_EXTRA:-})
mapfile -t missing < <(missing_of "${need[@]}")
((${#missing[@]})) && $sudo apt-get update -qq

wheel_pid=""
if ((want_venv)); then
  # The venv needs python3-venv first (seconds); the wheel (some 3 GB with its CUDA libraries)
  # then downloads alongside the rest of apt. Through uv (from PyPI, into the venv): it fetches
  # the wheels side by side and unpacks them natively, 17 s where pip took 100 on a 2-core
  # box (bench/results/fresh_clone_cpu.md). No cache: it would sit on disk twice. Not all
  # of its ~6000 modules byte-compiled: only those pkb imports (below).
  mapfile -t venv_missing < <(missing_of python3-venv)
  ((${#venv_missing[@]})) && apt_install python3-venv
  echo "pkb: installing torch 2.11.0 (libtorch) into .venv"
  python3 -m venv .venv
  { .venv/bin/pip install -q --disable-pip-version-check --no-cache-dir uv &&
    .venv/bin/uv pip install -q --no-cache --python .venv/bin/python3 torch==2.11.0 numpy; } &
  wheel_pid=$!
fi
mapfile -t missing < <(missing_of "${need[@]}")
if ((${#missing[@]})); then
  echo "pkb: installing Debian packages: ${missing[*]}"
  apt_install "${missing[@]}"
fi
if [ -n "$wheel_pid" ]; then
  wait "$wheel_pid" || { echo "pkb: could not install torch 2.11.0 into .venv (see above); remove .venv and run again" >&2; exit 1; }
  # The bytecode of what pkb's Python imports (torch, numpy, triton: ~800 modules), written
  # once here. Where PYTHONDONTWRITEBYTECODE is set, as CI images often have it, no import
  # ever writes it, and every one (a .py candidate's ranks, the tests' checks) compiles them
  # all again: 6 s an import of torch on 2 cores instead of 3.
  env -u PYTHONDONTWRITEBYTECODE .venv/bin/python3 -c '
import numpy, torch, torch.distributed
try:
    import triton
except ImportError:
    pass' || { echo "pkb: torch in .venv does not import (see above); remove .venv and run again" >&2; exit 1; }
fi
