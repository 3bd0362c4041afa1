#!/usr/bin/env bash
# Compiler and linker launcher for bench/compile/run.sh: runs the command as given (no
# ccache) and appends "start end wall_s cpu_s output" to $PKB_TU_LOG, where cpu_s is the
# command's user + system time (what other work on the machine does not inflate).
start=$(date +%s.%N)
"$@"
rc=$?
end=$(date +%s.%N)
# The children's user and system time in clock ticks: fields 16 and 17 of this shell's stat.
read -r -a stat </proc/$$/stat
cpu="(${stat[15]} + ${stat[16]}) / $(getconf CLK_TCK)"
out=?
prev=
for a in "$@"; do
  if [ "$prev" = -o ]; then out=$a; fi
  prev=$a
done
printf '%s %s %.2f %.2f %s\n' "$start" "$end" "$(echo "$end - $start" | bc)" "$(echo "scale=2; $cpu" | bc)" "$out" >>"$PKB_TU_LOG"
exit $rc
