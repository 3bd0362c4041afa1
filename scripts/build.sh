#!/usr/bin/env bash
# Configures and builds pkb into build/ (Release, all cores). Extra arguments go to cmake;
# PKB_TARGETS (optional) names the targets to build, else everything.
set -euo pipefail
cd "$(dirname "$0")/.."
py=()
if [ -n "${PKB_PYTHON:-}" ]; then py=(-DPKB_PYTHON="$PKB_PYTHON")
elif [ ! -x .venv/bin/python3 ]; then py=(-DPKB_PYTHON="$(command -v python3)"); fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${py[@]}" "$@" >/dev/null
targets=()
[ -n "${PKB_TARGETS:-}" ] && targets=(--target $PKB_TARGETS)
cmake --build build -j "$(nproc)" "${targets[@]}"
