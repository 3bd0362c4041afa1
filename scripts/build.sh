#!/usr/bin/env bash
# Configures and builds pkb into build/ (Release, all cores). Extra arguments go to cmake;
# PKB_TARGETS (optional) names the targets to build, else everything.
#   --host-only   (first argument) configure and build only the libraries that need no
#                 libtorch, which a later full build keeps: install-deps.sh --build-ahead
#                 runs it while the torch wheel installs
set -euo pipefail
cd "$(dirname "$0")/.."
host_only=OFF
if [ "${1:-}" = --host-only ]; then host_only=ON; shift; fi
py=()
if [ -n "${PKB_PYTHON:-}" ]; then py=(-DPKB_PYTHON="$PKB_PYTHON")
elif [ ! -x .venv/bin/python3 ]; then py=(-DPKB_PYTHON="$(command -v python3)"); fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPKB_HOST_ONLY=$host_only "${py[@]}" "$@" >/dev/null
targets=()
if [ $host_only = ON ]; then targets=(--target pkb_host)
elif [ -n "${PKB_TARGETS:-}" ]; then targets=(--target $PKB_TARGETS); fi
cmake --build build -j "$(nproc)" "${targets[@]}"
