#!/usr/bin/env bash
# Configures and builds pkb into build/ (Release, all cores). Extra arguments go to cmake;
# PKB_TARGETS (optional) names the targets to build, else everything.
set -euo pipefail
cd "$(dirname "$0")/.."
py=()
if [ -n "${PKB_PYTHON:-}" ]; then py=(-DPKB_PYTHON="$PKB_PYTHON")
elif [ ! -x .venv/bin/python3 ]; then py=(-DPKB_PYTHON="$(command -v python3)"); fi
# Ninja for a new build folder (an existing one keeps its generator): it compiles any
# target's sources as soon as a core is free, where make first finishes the libraries a
# target links, leaving a core idle behind each library's last unit.
gen=()
if [ ! -f build/CMakeCache.txt ] && command -v ninja >/dev/null; then gen=(-G Ninja); fi
cmake -S . -B build "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "${py[@]}" "$@" >/dev/null
targets=()
[ -n "${PKB_TARGETS:-}" ] && targets=(--target $PKB_TARGETS)
cmake --build build -j "$(nproc)" "${targets[@]}"
