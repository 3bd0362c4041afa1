#!/usr/bin/env bash
# Compiler and linker launcher for bench/compile/run.sh: runs the command as given (no
# ccache) and appends "start end seconds output" to $PKB_TU_LOG.
start=$(date +%s.%N)
"$@"
rc=$?
end=$(date +%s.%N)
out=?
prev=
for a in "$@"; do
  if [ "$prev" = -o ]; then out=$a; fi
  prev=$a
done
printf '%s %s %.2f %s\n' "$start" "$end" "$(echo "$end - $start" | bc)" "$out" >>"$PKB_TU_LOG"
exit $rc
