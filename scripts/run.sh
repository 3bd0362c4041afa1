#!/usr/bin/env bash
# The main job on a fresh machine: installs what is missing, builds pkb, and evaluates a
# candidate on the best device present (CUDA when a GPU is visible, else the CPU device
# with 4 ranks). Extra arguments go to pkb.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
if ./build/pkb doctor --json | grep -q '"index"'; then
  exec ./build/pkb dryrun --problem coll_allreduce "$@"
else
  exec ./build/pkb dryrun --problem coll_allreduce --device cpu --world-size 4 "$@"
fi
