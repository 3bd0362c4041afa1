#!/usr/bin/env bash
# Snapshots the committed tree into .gpu/src for scripts/gpu-check.sh, so a GPU run builds
# exactly what is committed (not half-written files in the working tree).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .gpu && mkdir -p .gpu/src
git archive HEAD | tar -x -C .gpu/src
git rev-parse --short HEAD >.gpu/commit
# ThunderKittens' headers for the tk examples (PKB_TK_DIR there), from the shared copy.
tk=../shared/thirdparty/ThunderKittens/include
[ -d "$tk" ] && mkdir -p .gpu/tk && cp -r "$tk" .gpu/tk/
# The original ParallelKernelBench's five files (Apache-2.0, for tests only) for stage_original.
orig=../shared/thirdparty/pkb-original/candidates
[ -d "$orig" ] && mkdir -p .gpu/orig && cp "$orig"/*.py .gpu/orig/
du -sh .gpu
