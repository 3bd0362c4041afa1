#!/usr/bin/env bash
# Cold compile of the `pkb` target as scripts/run.sh builds it (Release, all cores), with no
# compiler cache: a fresh build folder, every compile and link timed by tu_timer.sh. Prints
# the configure and build wall times and, per target, the compile seconds of its files.
# usage: bench/compile/run.sh BUILD_DIR [cmake args...]
# BUILD_DIR is created afresh and removed at the end (KEEP=1 keeps it).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: bench/compile/run.sh BUILD_DIR [cmake args...]" >&2; exit 2; }
dir=$1; shift
rm -rf "$dir"; mkdir -p "$dir"
dir=$(realpath "$dir")
timer=$(realpath bench/compile/tu_timer.sh)
export PKB_TU_LOG=$dir/tu_times.log CCACHE_DISABLE=1
echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with local changes)'), $(nproc) cores"
echo "before: $(uptime)"
t0=$(date +%s.%N)
# PKB_CCACHE names the compiler launcher (CMakeLists.txt): the timer instead of ccache.
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DPKB_CCACHE="$timer" -DCMAKE_CXX_LINKER_LAUNCHER="$timer" "$@" >/dev/null
t1=$(date +%s.%N)
cmake --build "$dir" -j "$(nproc)" --target pkb >/dev/null
t2=$(date +%s.%N)
echo "after:  $(uptime)"
printf 'configure %.1f s, build %.1f s, total %.1f s\n' "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" "$(echo "$t2 - $t0" | bc)"
python3 bench/compile/summary.py "$PKB_TU_LOG"
[ "${KEEP:-0}" = 1 ] || rm -rf "$dir"
