#!/usr/bin/env bash
# Samples the host every PERIOD seconds (default 0.5) into FILE until killed: each CPU's
# /proc/stat line (user nice system idle iowait irq softirq steal, in jiffies) and, for every
# pkb process, its main thread's schedstat (ns on a CPU, ns waiting on a run queue, slices),
# the CPU it last ran on, and the sum of its threads' schedstat. Read beside a sweep's
# records to tell a CPU that slowed (steal, a busy run queue) from a process that did.
#   bash bench/host_monitor.sh FILE [PERIOD] &  ...  kill $!
set -u
out=$1 period=${2:-0.5}
while :; do
  {
    echo "T $(date +%s.%N)"
    grep '^cpu' /proc/stat
    for p in $(pgrep -x pkb); do
      main=$(cat /proc/$p/schedstat 2>/dev/null) || continue
      cpu=$(awk '{sub(/^.*\) /, ""); print $37}' /proc/$p/stat 2>/dev/null)
      all=$(cat /proc/$p/task/*/schedstat 2>/dev/null | awk '{r += $1; w += $2; n++} END {print r, w, n}')
      echo "P $p $main $cpu $all"
    done
  } >>"$out"
  sleep "$period"
done
