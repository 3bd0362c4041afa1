#!/usr/bin/env bash
# pkb's checks on a lent GPU machine, which reaches no package registry: builds pkb from the
# snapshot of the committed tree in .gpu/src against the machine's own python3 torch and the
# Debian packages in .deps (scripts/fetch-device-debs.sh), then runs the stages named on the
# command line, each NAME or NAME:ARG. Everything lands in $OUT (default /tmp/pkb-gpu):
# summary.md (one row a step, with each evaluation's verdict and timing), log.txt (every
# command's output) and results.jsonl (every evaluation's JSON, its step's name in "step").
#
#   scripts/gpu-snapshot.sh                                  # here: .gpu/src = git archive HEAD
#   BUDGET_S=580 bash scripts/gpu-check.sh smoke examples:1  # there, with .deps and .gpu carried
#
# A device call brings back at most 8 files from its $OUT: where two stages run in one call,
# give each its own OUT and keep what comes back few (gzip the logs, drop results.jsonl).
# BUDGET_S (seconds, optional) ends the script in time: each step gets what is left of it, so
# no step outlives the machine's time limit (a `timeout` around this script would orphan the
# step). No step runs longer than 600 s. NVLink multicast stays off.
#
# | stage | argument (default) | what it runs | expected |
# | --- | --- | --- | --- |
# | smoke | | doctor; selftest W=1 and W=4 sharing the GPU; dryrun W=1 (NCCL) and W=4 (shared); eval of the all-reduce example at W=1 and W=2 | every step exit 0, both evals correct |
# | runtime | | selftest W=1, 2, 4 and W=4 without MPS; dryrun of the 8 collectives at W=1, 2, 4 with the saved rank_*.pt checked in Python; a segfaulting rank | exit 0; the fault exit 4 (crash) |
# | api | | the reference-API test problems (tests/api) at W=1, 2, 4, each saved output recomputed (tests/check_api.py) | exit 0 |
# | faults | | every fault reference (tests/faults) at W=2 sharing the GPU, then a look for leftovers | crash (4) or timeout (5) as named; no worker, MPS daemon or /dev/shm segment left |
# | examples | W,... (1,2) | every example candidate (solutions_cuda, solutions_triton, solutions_tk) at the default size, TRIALS (10) trials, timed alone; ONLY (a regex) picks by file | correct (exit 0); W outside a problem's constraints skipped |
# | integrity | W,... (1,2) | tests/candidates/expected.tsv's CUDA candidates with their verdicts, two at a time; the saboteurs beside the honest example, and a sweep with a saboteur first; the forgers at --size large, W=1; ONLY (a regex) picks by file and leaves the sweep out | each its expected verdict; the late saboteurs leave the reference's median where the honest run has it; the reference saboteur is flagged reference_slowed |
# | escape | | the side-stream saboteur at W=1 and W=2; a copy-bound candidate at W=2 | integrity_violation, integrity_violation, correct |
# | bandwidth | | a copy-bound all-gather (one cudaMemcpyAsync) at --size large, W=1, three times, and the example all-gather | correct; candidate / device copy within 5% |
# | reference_sweep | PROBLEMS (all) | pkb eval -s @reference over PROBLEMS at W=1, then at W=2 sharing the GPU (no timing, 10 trials); reference_sweep.jsonl and reference_sweep.md (bench/reference_as_candidate.py) | every problem correct; most speedups within [0.95, 1.05] (docs/results.md says why the others are off) |
# | large | REGEX (.) | every CUDA example at --size large, W=1, with pkb's default counts and time budgets, each after its memory plan | correct, each within 10 minutes |
# | audit | REGEX (none) | every reference alone at --size large, W=1 (bench/reference_audit.sh), REGEX's first; AUDIT_REST=0: only those | reference_audit_h200.md: median, bound, fraction per problem |
# | families | | dryrun of every problem at W=1 on one start of the ranks; validate all at W=2 sharing the GPU | exit 0 |
# | backends | W,... (1,2) | the CUDA, Triton and ThunderKittens examples side by side; an empty Python pkb_run against an empty CUDA one (bench/overhead) | correct; the Python call's overhead within noise |
# | cost | | bench/eval_cost.sh: an evaluation's phases, cold and warm cache, W=1 | a table |
# | sandbox | W (2) | the all-reduce example with and without the sandbox, twice; tp_gemm_allgather sandboxed; W=4 under MPS | correct; medians within noise of each other |
# | refcomm | | three references at --size large, W=2 sharing the GPU, over pkb's shared-memory communicator and over gloo | exit 0; ms a trial per rank |
# | tp_shared | PROBLEMS (the 3 overlap examples) | the overlap examples at the default size W=4 and at --size large W=2 and 4, ranks sharing the GPU | correct (shared_gpu) |
# | probe | NAME,... | reference probes bench/NAME.py: a reference's steps at --size large timed alone | their tables in the summary |
# | refs | W,... (1,2,4) | several GPUs or one: every reference's dryrun with its saved outputs checked in Python (tests/check_dryrun.py, tests/check_problem.py), PARALLEL (6) at a time; ONLY (a regex) picks | exit 0 |
# | original | W,... (1,2) | the original ParallelKernelBench's five candidate files (.gpu/orig): pkb build cold then cached, pkb eval at each W, a ParallelKittens module refused, a sweep of the folder and its report; alone in a call (the cold builds take ~50 s each) | each its verdict with its reason (41_ddp_cuda: compile_error, its host-side asm trap); cold and cached compile times |
# | busbw | W (the GPUs, at least 2) | several GPUs: torch.distributed's collectives and pkb's references and examples at 1-1024 MiB (bench/torch_collectives.py, bench/busbw_table.py) | busbw_table.md |
#
# On a machine with several GPUs (one rank each, NCCL): `smoke refs:2,4`, `examples:2,4`,
# `busbw:4 integrity:4` (`refs:2,4,8` and `busbw:8` on eight).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/pkb-gpu}
mkdir -p "$OUT"
LOG=$OUT/log.txt SUM=$OUT/summary.md RES=$OUT/results.jsonl
SRC=$PWD/.gpu/src
END=$(($(date +%s) + ${BUDGET_S:-86400}))
export PKB_CACHE_DIR=/tmp/pkb-cache

# Debian libraries for the build and at run time; libcurl from the system when it has one.
lib=$PWD/.deps/root/usr/lib/x86_64-linux-gnu
if ldconfig -p | grep -q "libcurl.so.4 "; then
  ln -sf "$(ldconfig -p | awk '/libcurl.so.4 /{print $NF; exit}')" "$lib/libcurl.so"
else
  cp -a .deps/curl/usr/lib/x86_64-linux-gnu/. "$lib/"
fi
export LD_LIBRARY_PATH=$lib:${LD_LIBRARY_PATH:-}

echo "# pkb on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(date -u +%FT%TZ), commit $(cat .gpu/commit)" >"$SUM"
echo "| step | exit | seconds | note |" >>"$SUM"
echo "| --- | --- | --- | --- |" >>"$SUM"

# step NAME EXPECTED_EXIT COMMAND...: runs it, logs it, adds a row to the summary.
step() {
  local name=$1 want=$2
  shift 2
  local left=$((END - $(date +%s)))
  if [ $left -lt 10 ]; then
    printf "| %s | | | skipped: out of BUDGET_S |\n" "$name" >>"$SUM"
    return 0
  fi
  echo "=== $name: $*" >>"$LOG"
  local t0=$EPOCHREALTIME
  timeout $((left < 600 ? left : 600)) "$@" >>"$LOG" 2>&1
  local rc=$? t
  t=$(python3 -c "print($EPOCHREALTIME - $t0)")
  local note=""
  if [ "$rc" = 2 ] && tail -3 "$LOG" | grep -q "pick another --world-size"; then note="skipped: W outside the problem's constraints"
  elif [ "$rc" != "$want" ]; then note="**expected exit $want**"; fi
  printf "| %s | %s | %.1f | %s |\n" "$name" "$rc" "$t" "$note" >>"$SUM"
  return 0
}

# eval_json NAME EXPECTED_EXIT EVAL-ARGS...: a pkb eval whose JSON goes to results.jsonl.
eval_json() {
  local name=$1 want=$2
  shift 2
  local j=/tmp/pkb-eval.json
  rm -f $j
  step "$name" "$want" "$PKB" eval --json $j "$@"
  if [ -f $j ]; then
    python3 -c "import json,sys; d=json.load(open('$j')); d['step']='$name'; print(json.dumps(d))" >>"$RES"
    python3 - "$j" >>"$SUM" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
t = d.get("timing") or {}
c = (t.get("candidate") or {}).get("median_us")
r = (t.get("reference") or {}).get("median_us")
line = f"|  ↳ {d['verdict']} | | | {d['message'][:110]}"
if c:
    line += f"; median cand {c:.1f} us, ref {r:.1f} us, speedup {d.get('speedup', 0):.2f}x"
    if d.get("busbw_gbps"): line += f", busbw {d['busbw_gbps']['candidate']:.0f} GB/s"
    if d.get("roofline"): line += f", roofline {100*d['roofline']['fraction']:.0f}%"
    if d.get("flags"): line += ", flags " + ",".join(d["flags"])
    if t.get("baseline"): line += f"; baseline {t['baseline']['median_us']:.1f} us"
    rd = t.get("rounds") or {}
    if rd: line += f"; {rd.get('count')} rounds of {rd.get('block')}, ended by {rd.get('stop')}"
if t.get("gate_overhead"):
    g, own = t["gate_overhead"], (t.get("candidate_self") or {}).get("median_us")
    line += f"; judge's clock (gate {g['median_us']:.1f} us taken off), own events {own:.1f} us" if own else ""
if d.get("speedup_interval"):
    line += f"; 95% [{d['speedup_interval']['lo']:.2f}, {d['speedup_interval']['hi']:.2f}]"
if d.get("escape_check"):
    e = d["escape_check"]
    line += f"; escape check: {e['calls']} calls host {e['host_us']:.0f} us, stream {e['event_us']:.0f} us, baseline {e['baseline_us']:.0f} us"
print(line + " |")
EOF
  fi
}

# batch P: the jobs on stdin (NAME<TAB>EXIT<TAB>COMMAND), P at a time (scripts/gpu-batch.py).
batch() {
  python3 "$SRC/scripts/gpu-batch.py" --summary "$SUM" --log "$LOG" --results "$RES" --end "$END" --parallel "$1"
}

# exit_of VERDICT: the exit code pkb eval gives it.
exit_of() {
  case $1 in correct) echo 0 ;; wrong) echo 1 ;; compile_error) echo 3 ;; crash) echo 4 ;;
    timeout) echo 5 ;; integrity_violation) echo 6 ;; esac
}

build() {
  local t0
  t0=$(date +%s)
  PKB_COMMIT=$(cat .gpu/commit)  # the snapshot has no .git: versions.commit comes from here
  export PKB_COMMIT
  cmake -S "$SRC" -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DPKB_PYTHON="$(command -v python3)" \
    -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DCMAKE_CUDA_ARCHITECTURES=90a >>"$LOG" 2>&1 &&
    ninja -C build-gpu pkb pkb_test_refs pkb_api_refs pkb_gallery_refs >>"$LOG" 2>&1
  local rc=$?
  echo "| build (ninja, $(nproc) cores) | $rc | $(($(date +%s) - t0)) | |" >>"$SUM"
  [ $rc = 0 ] || { tail -40 "$LOG"; exit 1; }
}

PKB=$PWD/build-gpu/pkb
COLL="coll_allreduce coll_allgather coll_broadcast coll_reduce coll_scatter coll_gather coll_reducescatter coll_alltoall"
GALLERY="--problem-dir $SRC/tests/candidates/problems --reference-lib $PWD/build-gpu/tests/libpkb_gallery_refs.so"
export PKB_TK_DIR=$PWD/.gpu/tk  # ThunderKittens' headers (scripts/gpu-snapshot.sh)

stage_smoke() {
  step "doctor" 0 "$PKB" doctor
  "$PKB" doctor --json >"$OUT/doctor.json" 2>>"$LOG"
  step "selftest W=1" 0 "$PKB" selftest -w 1
  step "selftest W=4 shared GPU, MPS" 0 "$PKB" selftest -w 4
  step "dryrun coll_allreduce W=1 nccl" 0 "$PKB" dryrun -p coll_allreduce -w 1
  step "dryrun coll_allgather W=4 shared" 0 "$PKB" dryrun -p coll_allgather -w 4
  eval_json "eval coll_allreduce W=1" 0 -p coll_allreduce -s "$SRC/solutions_cuda/coll_allreduce.cu" -w 1
  eval_json "eval coll_allreduce W=2 shared" 0 -p coll_allreduce -s "$SRC/solutions_cuda/coll_allreduce.cu" -w 2
}

stage_runtime() {
  step "doctor" 0 "$PKB" doctor
  "$PKB" doctor --json >"$OUT/doctor.json" 2>>"$LOG"
  for w in 1 2 4; do step "selftest W=$w" 0 "$PKB" selftest -w $w; done
  step "selftest W=4 without MPS" 0 "$PKB" selftest -w 4 --no-mps
  for p in $COLL; do
    for w in 1 2 4; do
      rm -rf /tmp/dr
      step "dryrun $p W=$w" 0 "$PKB" dryrun -p $p -w $w --save-outputs /tmp/dr
      step "  saved rank_*.pt load in torch and hold the answer" 0 python3 "$SRC/tests/check_dryrun.py" $p /tmp/dr $w
    done
  done
  step "fault: rank segfaults (expect crash)" 4 "$PKB" --problem-dir "$SRC/tests/faults" \
    --reference-lib build-gpu/tests/libpkb_test_refs.so dryrun -p test_fault_segv -w 2 -n 3
}

stage_api() {
  # W=1 runs under NCCL (ncclCommSplit), W=2 and 4 (ranks sharing the GPU) through pkb's
  # shared-memory communicator on CUDA tensors.
  for p in test_api_grid test_api_ring test_api_uneven test_api_dynamic test_api_dtypes; do
    for w in 1 2 4; do
      [ $p = test_api_ring ] && [ $w = 1 ] && continue
      rm -rf /tmp/dr
      step "dryrun $p W=$w" 0 "$PKB" --problem-dir "$SRC/tests/api" --reference-lib build-gpu/tests/libpkb_api_refs.so \
        dryrun -p $p -w $w --trials 3 --save-outputs /tmp/dr
      step "  recomputed from the saved inputs" 0 python3 "$SRC/tests/check_api.py" $p /tmp/dr $w
    done
  done
}

stage_faults() {
  local f
  for f in segv:4 abort:4 exit:4 throw:4 skip_collective:5 hang_init:5; do
    step "fault ${f%%:*} W=2 (expect exit ${f#*:})" "${f#*:}" "$PKB" --problem-dir "$SRC/tests/faults" \
      --reference-lib build-gpu/tests/libpkb_test_refs.so dryrun -p "test_fault_${f%%:*}" -w 2 -n 3 --timeout 8
    grep -oE "(crash|timeout): [^|]*" "$LOG" | tail -1 | sed "s/^/|  ↳ /; s/$/ | | | |/" >>"$SUM"
  done
  step "no worker, MPS daemon or /dev/shm segment left" 0 bash -c \
    '! pgrep -f "pkb [_]_worker" && ! pgrep -f "nvidia-cuda-mp[s]" && ! ls /dev/shm | grep -q pkb'
}

stage_examples() {
  # A short run each (TRIALS, default 10, and the default timed calls) keeps every example
  # at both W inside one machine call; TRIALS=100 is pkb's default.
  local worlds=${1:-1,2} w f
  for w in ${worlds//,/ }; do
    for f in "$SRC"/solutions_cuda/*.cu "$SRC"/solutions_triton/*.py "$SRC"/solutions_tk/*.cu; do
      [[ $f =~ ${ONLY:-.} ]] || continue
      eval_json "example $(basename "$(dirname "$f")")/$(basename "$f") W=$w" 0 -p "$(basename "${f%.*}")" -s "$f" \
        -w $w --trials "${TRIALS:-10}"
    done
  done
}

stage_integrity() {
  local worlds=${1:-1,2} w c
  # The gallery: at W=1 skip_comm_one_rank has no rank to skip and is correct; ranks sharing
  # a GPU are timed (flag shared_gpu) but never held to the NVLink roofline, so
  # honest_allreduce is correct there.
  for w in ${worlds//,/ }; do
    tail -n +2 "$SRC/tests/candidates/expected.tsv" | while read -r file problem verdict; do
      case $file in cuda/*) ;; *) continue ;; esac
      [[ $file =~ ${ONLY:-.} ]] || continue
      [ $w = 1 ] && [ $file = cuda/skip_comm_one_rank.cu ] && verdict=correct
      [ $w -gt "$(nvidia-smi -L | wc -l)" ] && [ $file = cuda/honest_allreduce.cu ] && verdict=correct
      printf "gallery %s W=%s (expect %s)\t%s\t%q %s eval --json {json} -p %s -s %q -w %s --trials 10 --warmup 20 --iters 50 --timeout 20\n" \
        $file $w $verdict "$(exit_of $verdict)" "$PKB" "$GALLERY" $problem "$SRC/tests/candidates/$file" $w
    done
  done | batch 2
  # The saboteurs: two keep the GPU busy once their timed calls are over (spin kernels from a
  # host thread; a persistent kernel left resident), one whenever it is not being called
  # (the reference's blocks between its own). Each beside the honest example; then one
  # sweep with a saboteur first and two honest candidates after it.
  for w in ${worlds//,/ }; do
    for c in solutions_cuda/coll_allreduce.cu tests/candidates/cuda/spin_saboteur.cu tests/candidates/cuda/resident_kernel.cu \
      tests/candidates/cuda/reference_saboteur.cu; do
      [[ $c =~ ${ONLY:-.} ]] || continue
      eval_json "integrity $(basename $c) W=$w (alone)" 0 -p coll_allreduce -s "$SRC/$c" -w $w --trials 10 --warmup 20 --iters 50
    done
    [ -n "${ONLY:-}" ] && continue  # the sweep only with the whole stage
    rm -rf /tmp/isweep && mkdir -p /tmp/isweep/solutions_cuda/{a_saboteur,b_honest,c_honest}/coll_allreduce
    cp "$SRC/tests/candidates/cuda/spin_saboteur.cu" /tmp/isweep/solutions_cuda/a_saboteur/coll_allreduce/sample_0.cu
    cp "$SRC/solutions_cuda/coll_allreduce.cu" /tmp/isweep/solutions_cuda/b_honest/coll_allreduce/sample_0.cu
    cp "$SRC/tests/candidates/cuda/honest_allreduce.cu" /tmp/isweep/solutions_cuda/c_honest/coll_allreduce/sample_0.cu
    rm -rf /tmp/isweep-cache
    step "integrity sweep W=$w: saboteur first, then two honest" 0 env PKB_CACHE_DIR=/tmp/isweep-cache "$PKB" sweep \
      --solutions /tmp/isweep/solutions_cuda --problems coll_allreduce -w $w --out /tmp/isweep/r.jsonl \
      --trials 10 --warmup 20 --iters 50
    python3 - /tmp/isweep/r.jsonl "$w" >>"$SUM" <<'EOF2'
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    t = d.get("timing") or {}
    print(f"|  ↳ sweep W={sys.argv[2]} {d['sweep']['run']}: {d['verdict']} | | | ref {t.get('reference', {}).get('median_us', 0):.1f} us"
          f" (baseline {t.get('baseline', {}).get('median_us', 0):.1f}), cand {t.get('candidate', {}).get('median_us', 0):.1f} us, "
          f"speedup {d.get('speedup') or 0:.2f}x, wall {d.get('wall_s', 0):.1f} s, costs {json.dumps(d.get('costs_s', {}))} |")
    d["step"] = f"integrity sweep W={sys.argv[2]}"
    print(json.dumps(d), file=open("/tmp/isweep/lines.jsonl", "a"))
EOF2
    cat /tmp/isweep/lines.jsonl >>"$RES" 2>/dev/null
  done
  # The forgers at --size large (the gallery ran them at the default size): the timer and
  # report forgers are caught by the judge's clock, the capture forger by the judge's copies.
  for c in forge_event_timer:6 forge_report:6 forge_captures:1; do
    [[ ${c%%:*} =~ ${ONLY:-.} ]] || continue
    eval_json "forger ${c%%:*} large W=1" "${c#*:}" -p tp_gemm_allgather -s "$SRC/tests/candidates/cuda/${c%%:*}.cu" \
      -w 1 --size large
  done
}

stage_escape() {
  eval_json "gallery cuda/side_stream.cu W=2 (expect integrity_violation)" 6 -p coll_allreduce \
    -s "$SRC/tests/candidates/cuda/side_stream.cu" -w 2 --trials 10 --warmup 20 --iters 50 --timeout 20
  eval_json "gallery cuda/side_stream.cu W=1 (expect integrity_violation)" 6 -p coll_allreduce \
    -s "$SRC/tests/candidates/cuda/side_stream.cu" -w 1 --trials 10 --warmup 20 --iters 50 --timeout 20
  eval_json "gallery cuda/copy_allgather.cu W=2 (expect correct)" 0 -p coll_allgather \
    -s "$SRC/tests/candidates/cuda/copy_allgather.cu" -w 2 --trials 10 --warmup 20 --iters 50
}

stage_bandwidth() {
  # The copy time pkb measures in the same run (device_copy) is what the copy-bound
  # candidate's median must match; three runs give the spread of the median.
  for k in 1 2 3; do
    eval_json "bandwidth run $k: copy_allgather large W=1" 0 -p coll_allgather --size large -w 1 \
      -s "$SRC/tests/candidates/cuda/copy_allgather.cu" --trials 20
  done
  eval_json "bandwidth: solutions_cuda/coll_allgather large W=1" 0 -p coll_allgather --size large -w 1 \
    -s "$SRC/solutions_cuda/coll_allgather.cu" --trials 20
}

stage_reference_sweep() {
  # Every problem's reference as its own candidate: a check of pkb's whole protocol, not a
  # result. At W=2 both ranks share the GPU, so only the verdicts count there. Problems
  # that a world size excludes are left out with a line. The whole set at W=1 takes 6-8
  # minutes on an H200: split it over calls with PROBLEMS (categories, comma-separated).
  local problems=${1:-all} j2=/tmp/pkb-reference-w2.jsonl
  rm -f "$OUT/reference_sweep.jsonl" $j2
  step "@reference $problems W=1" 0 "$PKB" eval -p "$problems" -s @reference -w 1 ${TRIALS:+--trials $TRIALS} \
    --json "$OUT/reference_sweep.jsonl"
  [ "${REF_W2:-1}" = 0 ] || step "@reference $problems W=2 shared, no timing" 0 "$PKB" eval -p "$problems" -s @reference \
    -w 2 --no-timing --trials 10 --json $j2
  cat $j2 >>"$OUT/reference_sweep.jsonl" 2>/dev/null
  python3 "$SRC/bench/reference_as_candidate.py" "$OUT/reference_sweep.jsonl" >"$OUT/reference_sweep.md" 2>>"$LOG"
  tail -n 2 "$OUT/reference_sweep.md" | sed '/^$/d; s/^/| /; s/$/ | | | |/' >>"$SUM"
}

stage_large() {
  # The slowest known (the ring attention's example, ~3 minutes) goes last.
  local f p last
  for last in no yes; do
    for f in "$SRC"/solutions_cuda/*.cu; do
      p=$(basename "$f" .cu)
      [[ $p =~ ${1:-.} ]] && [ "$([ $p = cp_ring_attention ] && echo yes || echo no)" = $last ] || continue
      step "plan $p large W=1" 0 "$PKB" eval -p $p -s "$f" -w 1 --size large --dry-plan
      eval_json "large $p W=1 (default budgets)" 0 -p $p -s "$f" -w 1 --size large
    done
  done
}

stage_audit() {
  # In what is left of BUDGET_S less AUDIT_MARGIN_S (default 60); each reference's timed calls
  # are cut off after 3 s (at least 3). ARG (optional): a regex of problems to audit first,
  # the rest after it while time lasts (AUDIT_REST=0: only the first). The table lands in
  # $OUT/reference_audit_h200.md; bench/reference_audit_join.py joins several calls' tables.
  local first=${1:-} left t0
  left=$((END - $(date +%s) - ${AUDIT_MARGIN_S:-60})) t0=$(date +%s)
  [ $left -lt 30 ] && { echo "| audit | | | skipped: out of BUDGET_S |" >>"$SUM"; return 0; }
  mkdir -p /tmp/pkb-audit
  if [ -n "$first" ]; then
    OUT=/tmp/pkb-audit BUDGET_S=$left PER_PROBLEM_S=${PER_PROBLEM_S:-60} WARMUP=${WARMUP:-2} ITERS=${ITERS:-10} \
      EXTRA="--timing-budget 3 --min-iters 3" ONLY="$first" bash bench/reference_audit.sh "$PKB" /tmp/pkb-audit/first.md >>"$LOG" 2>&1
    left=$((left - ($(date +%s) - t0)))
    mv /tmp/pkb-audit/status.tsv /tmp/pkb-audit/status-first.tsv
  fi
  if [ $left -ge 30 ] && [ "${AUDIT_REST:-1}" != 0 ]; then
    OUT=/tmp/pkb-audit BUDGET_S=$left PER_PROBLEM_S=${PER_PROBLEM_S:-60} WARMUP=${WARMUP:-2} ITERS=${ITERS:-10} \
      EXTRA="--timing-budget 3 --min-iters 3" SKIP="$first" bash bench/reference_audit.sh "$PKB" /tmp/pkb-audit/rest.md >>"$LOG" 2>&1
  fi
  cat /tmp/pkb-audit/status-first.tsv >>/tmp/pkb-audit/status.tsv 2>/dev/null
  python3 bench/reference_audit_table.py /tmp/pkb-audit >"$OUT/reference_audit_h200.md" 2>>"$LOG"
  printf "| audit (%s problems timed) | | %d | table: reference_audit_h200.md |\n" \
    "$(ls /tmp/pkb-audit/*.json 2>/dev/null | wc -l)" $(($(date +%s) - t0)) >>"$SUM"
}

stage_families() {
  # Several problems in turn on one start of the ranks: every reference at W=1 through NCCL,
  # twice on the same communicators; then validate at W=2, two ranks sharing the GPU through
  # pkb's shared-memory communicator (problems W=2 does not fit are left out, each with a line).
  step "dryrun all W=1 (one rank, every problem in turn)" 0 "$PKB" dryrun -p all -w 1 --trials 2
  step "validate all W=2 shared (one start of the ranks)" 0 "$PKB" validate all -w 2 --trials 2
}

stage_backends() {
  local worlds=${1:-1,2} w p
  step "embedded Python built (.py candidates)" 0 test -f build-gpu/libpkb_python.so
  for w in ${worlds//,/ }; do
    for p in coll_allreduce tp_gemm_allgather; do
      eval_json "$p cuda W=$w" 0 -p $p -s "$SRC/solutions_cuda/$p.cu" -w $w
      eval_json "$p triton W=$w" 0 -p $p -s "$SRC/solutions_triton/$p.py" -w $w
      eval_json "$p tk W=$w" 0 -p $p -s "$SRC/solutions_tk/$p.cu" -w $w
    done
    echo "| **pkb's overhead of a Python call, W=$w** (bench/overhead/run.sh) | | | |" >>"$SUM"
    bash "$SRC/bench/overhead/run.sh" "$PKB" cuda $w >>"$SUM" 2>>"$LOG"
  done
}

stage_original() {
  # Issue 52: the original ParallelKernelBench's own files run unchanged (solution(*inputs)
  # over torch.distributed and symmetric memory, CUDA built inline). Their five files
  # (.gpu/orig, carried by scripts/gpu-snapshot.sh): compile time cold (a cache of their own)
  # then cached, each evaluated at the W given (default 1,2: W=2 shares the GPU, the group
  # is gloo there; ep_moe_all2all's 512 MiB symmetric buffer outgrows the default heap, so
  # pkb maps a further one); a ParallelKittens module refused with its reason; the folder
  # swept and reported.
  local worlds=${1:-1,2} w f p o=$PWD/.gpu/orig cold=/tmp/pkb-orig-cache
  step "embedded Python built (.py candidates)" 0 test -f build-gpu/libpkb_python.so
  step "the original's five files present" 0 test -f "$o/14_gemm_allscatter_cuda.py"
  # stem:problem:build exit:eval exit, each failure the model's own (H200, 2026-12-06):
  # 1_allreduce_cuda passes hdl.signal_pad_ptrs_dev (an int in torch) where its extension
  # takes a tensor, a TypeError on the first call (wrong, 1); 14_gemm_allscatter_cuda's
  # signal-pad offsets count bytes, not its 32-bit words, so its atomics are misaligned
  # (crash, 4); 41_ddp_cuda's own CUDA_CHECK puts `asm("trap;")` in host code, which x86's
  # assembler rejects (compile error, 3).
  local files="1_allreduce_cuda:coll_allreduce:0:1 14_gemm_allscatter_cuda:tp_gemm_allgather:0:4
    14_gemm_allscatter_triton:tp_gemm_allgather:0:0 27_moe_all2all_primitive_cuda:ep_moe_all2all:0:0
    41_ddp_cuda:dp_ddp_adam_step:3:3"
  local stem built want
  rm -rf "$cold"
  for f in $files; do
    IFS=: read -r stem p built want <<<"$f"
    step "build $stem cold" $built env PKB_CACHE_DIR=$cold "$PKB" build -s "$o/$stem.py"
    sed -n 's/^line \([0-9]*\): extension \(.*\)$/|  ↳ line \1: \2 | | | |/p' \
      "$(ls -t $cold/build/*/build.log 2>/dev/null | head -1)" >>"$SUM" 2>/dev/null
  done
  # A failed build is not cached: only the ones that built.
  for f in $files; do
    IFS=: read -r stem p built want <<<"$f"
    [ "$built" = 0 ] && step "build $stem cached" 0 env PKB_CACHE_DIR=$cold "$PKB" build -s "$o/$stem.py"
  done
  # The evaluations and the sweep use those builds (the same cache).
  for w in ${worlds//,/ }; do
    for f in $files; do
      IFS=: read -r stem p built want <<<"$f"
      PKB_CACHE_DIR=$cold eval_json "original $stem $p W=$w" $want -p $p -s "$o/$stem.py" -w $w
    done
  done
  eval_json "original: a ParallelKittens module refused" 3 -p coll_allreduce \
    -s "$SRC/tests/original/candidates/parallelkittens.py" -w 1
  # The folder as a researcher has it (plus a ParallelKittens module): placed by the first
  # release's stems, W=1, 20 trials each (the evaluations above are the full ones).
  local sw=/tmp/pkb-orig-sweep
  rm -rf $sw && mkdir -p $sw/first_release && cp "$o"/*.py $sw/first_release/
  cp "$SRC/tests/original/candidates/parallelkittens.py" $sw/first_release/2_allgather_parallelkittens.py
  step "sweep of the original's files, W=1" 0 env PKB_CACHE_DIR=$cold "$PKB" sweep --solutions $sw/first_release \
    -w 1 -n 20 --out $sw/results.jsonl
  grep -h "not placed\|original-format file" "$LOG" | tail -3 | sed 's/^/|  ↳ /; s/$/ | | | |/' >>"$SUM"
  cat $sw/results.jsonl >>"$RES" 2>/dev/null
  echo '```' >>"$SUM"
  "$PKB" report $sw/results.jsonl >>"$SUM" 2>>"$LOG"
  echo '```' >>"$SUM"
  rm -rf "$cold" $sw
}

stage_cost() {
  echo "| **pkb's own cost** (bench/eval_cost.sh, W=1, CUDA) | | | |" >>"$SUM"
  bash bench/eval_cost.sh "$PKB" cuda 1 coll_allreduce "$SRC/solutions_cuda/coll_allreduce.cu" >>"$SUM" 2>>"$LOG"
}

stage_sandbox() {
  # The sandbox probes run on CUDA ranks here: NCCL, CUDA IPC and MPS must work inside it.
  local w=${1:-2}
  for k in 1 2; do
    eval_json "sandbox on: coll_allreduce W=$w run $k" 0 -p coll_allreduce -s "$SRC/solutions_cuda/coll_allreduce.cu" -w $w
    eval_json "sandbox off: coll_allreduce W=$w run $k" 0 -p coll_allreduce -s "$SRC/solutions_cuda/coll_allreduce.cu" -w $w --no-sandbox
  done
  eval_json "sandbox on: tp_gemm_allgather W=$w (cuBLAS loaded inside)" 0 -p tp_gemm_allgather -s "$SRC/solutions_cuda/tp_gemm_allgather.cu" -w $w
  eval_json "sandbox on, shared GPUs (MPS): coll_allreduce W=4" 0 -p coll_allreduce -s "$SRC/solutions_cuda/coll_allreduce.cu" -w 4
  step "selftest W=4 (ranks sharing GPUs, MPS)" 0 "$PKB" selftest -w 4
}

stage_refcomm() {
  # Which communicator carries the references best where ranks share a GPU (--ref-comm):
  # reference milliseconds a trial at --size large, W=2 (dryrun, 3 trials each).
  local p c
  for p in sci_distributed_rfft2 ep_moe_dispatch_permute fsdp_zero2_adam_step; do
    for c in shm gloo; do
      step "reference $p large W=2 over $c" 0 "$PKB" dryrun -p $p -w 2 --size large --trials 3 --ref-comm $c --no-mps
      tail -4 "$LOG" | awk -v s="$p $c" '$1 ~ /^[0-9]+$/ {printf "|  ↳ %s rank %s: %s ms a trial | | | |\n", s, $1, $2}' >>"$SUM"
    done
  done
}

stage_tp_shared() {
  # Large runs time 10 + 20 calls: the reference takes ~0.4 s a call there with ranks sharing
  # the GPU, and shared timings say nothing about speed anyway.
  local problems=${1:-tp_gemm_allgather,tp_allgather_gemm,tp_gemm_reducescatter} p
  for p in ${problems//,/ }; do
    eval_json "eval $p default W=4 shared" 0 -p $p -s "$SRC/solutions_cuda/$p.cu" -w 4
    for w in 2 4; do
      eval_json "eval $p large W=$w shared" 0 -p $p -s "$SRC/solutions_cuda/$p.cu" --size large -w $w \
        --warmup 10 --iters 20
    done
  done
}

stage_probe() {
  # bench/README.md says what each probe times; their tables go into the summary.
  local n
  for n in ${1//,/ }; do
    echo "| **bench/$n.py** | | | |" >>"$SUM"
    timeout $((END - $(date +%s))) python3 "$SRC/bench/$n.py" >>"$SUM" 2>>"$LOG"
  done
}

stage_refs() {
  # A dryrun needs no MPS; ranks sharing a GPU (W above the GPUs) communicate through pkb's
  # shared-memory communicator. The collectives are checked against their definition, the
  # other problems recomputed in fp64.
  local worlds=${1:-1,2,4} w p check problems
  problems=$("$PKB" list | awk 'NR>1 && $2 ~ /^[a-z]+_/ && $2 !~ /^test_/ {print $2}' | grep -E "${ONLY:-.}")
  for w in ${worlds//,/ }; do
    for p in $problems; do
      case $p in coll_*) check=check_dryrun.py ;; *) check=check_problem.py ;; esac
      printf "dryrun %s W=%s\t0\td=\$(mktemp -d) && %q dryrun -p %s -w %s --no-mps --trials 2 --save-outputs \$d && python3 %q %s \$d %s\n" \
        $p $w "$PKB" $p $w "$SRC/tests/$check" $p $w
    done
  done | batch "${PARALLEL:-6}"
}

stage_busbw() {
  # Sizes as nccl-tests counts them: per rank for all-reduce and broadcast, in total for
  # all-gather, reduce-scatter and all-to-all; rows of 1024 bf16.
  local w=${1:-$(nvidia-smi -L | wc -l)} p mib m
  [ "$w" -lt 2 ] && w=2
  step "torch.distributed collectives W=$w" 0 python3 -m torch.distributed.run --nproc_per_node $w \
    "$SRC/bench/torch_collectives.py" --mib 1,16,256,1024 --out "$OUT/torch_busbw.json"
  for p in coll_allreduce coll_allgather coll_reducescatter coll_alltoall coll_broadcast; do
    for mib in 1 16 256 1024; do
      m=$((mib * 512))
      case $p in coll_allgather | coll_reducescatter | coll_alltoall) m=$((m / w)) ;; esac
      printf "busbw %s %s MiB W=%s\t0\t%q eval --json {json} -p %s -s %q -w %s --size M=%s,N=1024 --trials 3 --warmup 50\n" \
        $p $mib $w "$PKB" $p "$SRC/solutions_cuda/$p.cu" $w $m
    done
  done | batch 1
  python3 "$SRC/bench/busbw_table.py" "$RES" "$OUT/torch_busbw.json" >"$OUT/busbw_table.md" 2>>"$LOG"
  cat "$OUT/busbw_table.md" >>"$SUM"
}

build
for s in "$@"; do  # NAME or NAME:ARG
  echo "| **stage $s** | | | |" >>"$SUM"
  if [[ $s == *:* ]]; then "stage_${s%%:*}" "${s#*:}"; else "stage_$s"; fi
done
cat "$SUM"
