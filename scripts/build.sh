#!/usr/bin/env bash
# Configures and builds pkb into build/ (Release, all cores). Extra arguments go to cmake;
# PKB_TARGETS (optional) names the targets to build, else everything.
set -euo pipefail
cd "$(dirname "$0")/.."
py=()  # else cmake/PkbTorch.cmake's default: .venv, then python3
if [ -n "${PKB_PYTHON:-}" ]; then py=(-DPKB_PYTHON="$PKB_PYTHON"); fi
# Ninja for a new build folder (an existing one keeps its generator): it compiles any
# target's sources as soon as a core is free, where make first finishes the libraries a
# target links, leaving a core idle behind each library's last unit.
gen=()
if [ ! -f build/CMakeCache.txt ] && command -v ninja >/dev/null; then gen=(-G Ninja); fi
# All of pkb unless the arguments say -DPKB_TORCH_FREE_ONLY=ON (scripts/setup.sh's first step).
cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DPKB_TORCH_FREE_ONLY=OFF "${py[@]}" "$@" >/dev/null
targets=()
[ -n "${PKB_TARGETS:-}" ] && targets=(--target $PKB_TARGETS)
cmake --build build -j "$(nproc)" "${targets[@]}"
