#!/usr/bin/env bash
# bench/fresh_clone.sh WHAT LOG: times scripts/WHAT.sh (run or test) on a fresh clone of this
# repository, as a new user or CI would run it: `git clone` into a new folder beside a link
# to ../shared (CI has it there), ccache off, every output line stamped with the seconds
# since the start; the clone is removed afterwards. bench/results/fresh_clone_cpu.md holds
# what it measured.
set -uo pipefail
what=$1 log=$(realpath -m "$2")
repo=$(cd "$(dirname "$0")/.." && pwd)
d=$(mktemp -d /tmp/pkb-fresh.XXXXXX)
trap 'rm -rf "$d"' EXIT
git clone -q "$repo" "$d/pkb"
[ -d "$repo/../shared" ] && ln -s "$(realpath "$repo/../shared")" "$d/shared"
cd "$d/pkb"
export CCACHE_DISABLE=1
{ echo "commit $(git rev-parse --short HEAD), $(nproc) cores, start $(date -u +%FT%TZ)"; uptime; } >"$log"
t0=$(date +%s)
"scripts/$what.sh" 2>&1 | python3 -u -c '
import sys, time
t0 = time.time()
for line in sys.stdin:
    sys.stdout.write(f"{time.time() - t0:7.1f} {line}")
    sys.stdout.flush()' >>"$log"
rc=${PIPESTATUS[0]}
{ echo "exit $rc after $(($(date +%s) - t0)) s, end $(date -u +%FT%TZ)"; uptime; } >>"$log"
exit "$rc"
