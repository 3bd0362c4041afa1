#!/usr/bin/env bash
# Snapshots the committed tree into .gpu/src for scripts/gpu-check.sh, so a GPU run builds
# exactly what is committed (not half-written files in the working tree).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .gpu && mkdir -p .gpu/src
git archive HEAD | tar -x -C .gpu/src
git rev-parse --short HEAD >.gpu/commit
du -sh .gpu
