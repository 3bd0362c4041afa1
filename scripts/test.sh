#!/usr/bin/env bash
# The tests on a fresh machine: installs what is missing, builds pkb and its tests, runs
# them all (GPU-only tests skip, saying so, where no GPU is visible).
set -euo pipefail
cd "$(dirname "$0")/.."
# The report test renders HTML in headless Chromium; the Slurm test runs a one-node cluster.
export PKB_DEPS_EXTRA="${PKB_DEPS_EXTRA:-} chromium slurmctld slurmd slurm-client munge"
scripts/install-deps.sh
scripts/build.sh -DPKB_BUILD_TESTS=ON
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 900
