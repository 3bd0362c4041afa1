#!/usr/bin/env bash
# Configures and builds pkb into build/ (Release, all cores). Extra arguments go to cmake;
# PKB_TARGETS (optional) names the targets to build, else everything.
set -euo pipefail
cd "$(dirname "$0")/.."
py=()  # else cmake/PkbTorch.cmake's default: .venv, then python3
if [ -n "${PKB_PYTHON:-}" ]; then py=(-DPKB_PYTHON="$PKB_PYTHON"); fi
# All of pkb unless the arguments say -DPKB_TORCH_FREE_ONLY=ON (scripts/setup.sh's first step).
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPKB_TORCH_FREE_ONLY=OFF "${py[@]}" "$@" >/dev/null
targets=()
[ -n "${PKB_TARGETS:-}" ] && targets=(--target $PKB_TARGETS)
cmake --build build -j "$(nproc)" "${targets[@]}"
