#!/usr/bin/env bash
# The tests on a fresh machine: installs what is missing, builds pkb and its tests, runs
# them all (GPU-only tests skip, saying so, where no GPU is visible).
set -euo pipefail
cd "$(dirname "$0")/.."
# The report test renders HTML in headless Chromium; the Slurm test runs a one-node cluster.
export PKB_DEPS_EXTRA="${PKB_DEPS_EXTRA:-} chromium slurmctld slurmd slurm-client munge"
scripts/install-deps.sh
scripts/build.sh -DPKB_BUILD_TESTS=ON
# A first run has no record of how long each test takes, and would start them in the order
# declared, the longest among the last; tests/ctest_costs.txt (bench/ctest_times.py) stands
# in for that record, so the longest start first. ctest keeps its own from then on.
mkdir -p build/Testing/Temporary
[ -f build/Testing/Temporary/CTestCostData.txt ] || cp tests/ctest_costs.txt build/Testing/Temporary/CTestCostData.txt
cd build
# One test more than cores: some of every test's time is a wait (a hang's deadline, late work
# given its seconds, a cluster's scheduler), which another test's work then fills.
ctest --output-on-failure -j "$(($(nproc) + 1))" --timeout 900
