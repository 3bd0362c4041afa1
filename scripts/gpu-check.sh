#!/usr/bin/env bash
# One call on a lent GPU machine (no package registry there): builds pkb from the snapshot
# of the committed tree in .gpu/src against the machine's own python3 torch and the Debian
# packages in .deps (scripts/fetch-device-debs.sh), then runs the stages named on the
# command line. Everything lands in $OUT: summary.md (a table), log.txt, results.jsonl.
#
#   scripts/gpu-snapshot.sh                       # here: .gpu/src = git archive HEAD
#   run: BUDGET_S=580 bash scripts/gpu-check.sh smoke   # there, carry [".deps", ".gpu"]
#
# BUDGET_S (seconds, optional) ends the script in time: each step gets what is left of it, so
# no step outlives the device call (a `timeout` around this script would orphan the step).
#
# Stages: smoke, runtime, api, faults, eval[:W,...], gallery[:W], escape, bandwidth, cost, tp,
# integrity[:W,...], large, large_all, audit[:REGEX], families, spike34, integrity34, reference_all, final35, debug35, final35b[:W1_SECONDS] (CATEGORIES, REF_W2= to skip W=2), final37, host35, host35c, host35e, host35f, fresh10, fresh10h, fp8_probe, refcheck:P,..., disco37, refs37c, magi_probe, combine_probe, combine37, asym35, probes37, refs37d, place35, pin35[:PROBLEMS], pinned_examples[:FROM], ops35[:PROBLEMS], final35c[:W1_SECONDS], ctx35[:PROBLEMS], shared2,
# tp_candidates, tp_shared[:P,...], backends[:W,...], triton[:W,...], original[:W,...], and for a machine with several GPUs (one rank each, NCCL)
# refs[:W,...] and busbw[:W]. Batched (scripts/gpu-batch.py, several checks at once):
# allrefs[:W,...], pgallery[:W,...], candidates[:W], family_candidates[:SIZE,...], sandbox[:W],
# strict_zero2[:TRIALS], refcomm,
# torchbw[:W].
# NVLink multicast stays off.
set -uo pipefail
cd "$(dirname "$0")/.."
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
  local rc=$? t=$(python3 -c "print($EPOCHREALTIME - $t0)")
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
    if d.get("device_copy"):
        dc = d["device_copy"]
        line += f"; device copy of the outputs' {dc['bytes']/2**20:.0f} MiB: {dc['median_us']:.1f} us (candidate/copy {c/dc['median_us']:.3f})"
if t.get("gate_overhead"):
    g, own = t["gate_overhead"], (t.get("candidate_self") or {}).get("median_us")
    line += f"; judge's clock (gate {g['median_us']:.1f} us taken off), own events {own:.1f} us" if own else ""
if d.get("speedup_interval"):
    line += f"; 95% [{d['speedup_interval']['lo']:.2f}, {d['speedup_interval']['hi']:.2f}]"
if t.get("reference_redraws"):
    line += "; earlier judges' attempts " + " | ".join(", ".join(f"{a['median_us']:.1f}±{a['iqr_us']:.1f} us host {[round(x or 0, 1) for x in a.get('host_median_us') or []]}" for a in d) for d in t["reference_redraws"])
if t.get("reference_attempts"):
    line += "; reference attempts " + ", ".join(f"{a['median_us']:.1f}±{a['iqr_us']:.1f} us @{a['clocks']['sm_mhz_before']}/{a['clocks']['sm_mhz_after']} MHz cpu {a.get('cpus')} host {[round(x or 0, 1) for x in a.get('host_median_us') or []]}" for a in t["reference_attempts"])
if "noisy_reference" in (d.get("flags") or []): line += " NOISY"
if d.get("escape_check"):
    e = d["escape_check"]
    line += f"; escape check: {e['calls']} calls host {e['host_us']:.0f} us, stream {e['event_us']:.0f} us, baseline {e['baseline_us']:.0f} us"
for side, h in (t.get("host") or {}).items():
    if not isinstance(h, dict): continue  # judge_at_candidate: the judges' probes, a list
    line += (f"; {side}'s host: enqueue {h['enqueue_median_us']:.1f} us (cpu {h.get('enqueue_cpu_median_us', -1):.1f} us, "
             f"{h.get('call_switches', '-')} switches in calls), thread cpu {100*h['thread_cpu_share']:.0f}%, "
             f"process {h['process_cpu_cores']:.2f} cores, switches {h['switches_voluntary']}+{h['switches_involuntary']} inv, "
             f"machine busy {100*h['machine_busy']:.0f}%, huge pages {h.get('thp_anon_kib', '-')}/{h.get('thp_file_kib', '-')} KiB")
print(line + " |")
EOF
  fi
}

build() {
  local t0=$(date +%s)
  export PKB_COMMIT=$(cat .gpu/commit)  # the snapshot has no .git: versions.commit comes from here
  cmake -S "$SRC" -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DPKB_PYTHON="$(command -v python3)" \
    -DCMAKE_PREFIX_PATH="$PWD/.deps/root/usr" -DCMAKE_CUDA_ARCHITECTURES=90a >>"$LOG" 2>&1 &&
    ninja -C build-gpu pkb pkb_test_refs pkb_api_refs pkb_gallery_refs >>"$LOG" 2>&1
  local rc=$?
  echo "| build (ninja, $(nproc) cores) | $rc | $(($(date +%s) - t0)) | |" >>"$SUM"
  [ $rc = 0 ] || { tail -40 "$LOG"; exit 1; }
}

PKB=$PWD/build-gpu/pkb
COLL="coll_allreduce coll_allgather coll_broadcast coll_reduce coll_scatter coll_gather coll_reducescatter coll_alltoall"

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
  # The reference-API test problems (tests/api): W=1 under NCCL (ncclCommSplit), W=2 and 4
  # (ranks sharing the GPU) through pkb's shared-memory communicator on CUDA tensors;
  # tests/check_api.py recomputes every saved output.
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
  # Ranks that fail on purpose (tests/faults), two ranks sharing the GPU.
  local f
  for f in segv:4 abort:4 exit:4 throw:4 skip_collective:5 hang_init:5; do
    step "fault ${f%%:*} W=2 (expect exit ${f#*:})" "${f#*:}" "$PKB" --problem-dir "$SRC/tests/faults" \
      --reference-lib build-gpu/tests/libpkb_test_refs.so dryrun -p "test_fault_${f%%:*}" -w 2 -n 3 --timeout 8
    grep -oE "(crash|timeout): [^|]*" "$LOG" | tail -1 | sed "s/^/|  ↳ /; s/$/ | | | |/" >>"$SUM"
  done
  step "no worker, MPS daemon or /dev/shm segment left" 0 bash -c \
    '! pgrep -f "pkb [_]_worker" && ! pgrep -f "nvidia-cuda-mp[s]" && ! ls /dev/shm | grep -q pkb'
}

stage_gallery() {
  # ARG: W, or W/REGEX to run only the CUDA candidates whose file matches REGEX.
  local w=${1:-2} only=.
  [[ $w == */* ]] && only=${w#*/} w=${w%%/*}
  tail -n +2 "$SRC/tests/candidates/expected.tsv" | while read -r file problem verdict; do
    case $file in cuda/*) ;; *) continue ;; esac
    [[ $file =~ $only ]] || continue
    case $verdict in correct) code=0 ;; wrong) code=1 ;; compile_error) code=3 ;; crash) code=4 ;;
      timeout) code=5 ;; integrity_violation) code=6 ;; esac
    eval_json "gallery $file W=$w (expect $verdict)" $code -p $problem -s "$SRC/tests/candidates/$file" -w $w \
      --trials 10 --warmup 20 --iters 50 --timeout 20
  done
}

stage_bandwidth() {
  # A copy-bound candidate (the all-gather at W=1 as one cudaMemcpyAsync) against the copy
  # time pkb measures in the same run; three runs for the spread of the median.
  for k in 1 2 3; do
    eval_json "bandwidth run $k: copy_allgather large W=1" 0 -p coll_allgather --size large -w 1 \
      -s "$SRC/tests/candidates/cuda/copy_allgather.cu" --trials 20
  done
  eval_json "bandwidth: solutions_cuda/coll_allgather large W=1" 0 -p coll_allgather --size large -w 1 \
    -s "$SRC/solutions_cuda/coll_allgather.cu" --trials 20
}

stage_escape() {
  eval_json "gallery cuda/side_stream.cu (expect integrity_violation)" 6 -p coll_allreduce \
    -s "$SRC/tests/candidates/cuda/side_stream.cu" -w 2 --trials 10 --warmup 20 --iters 50 --timeout 20
  eval_json "side_stream at W=1 (expect integrity_violation)" 6 -p coll_allreduce \
    -s "$SRC/tests/candidates/cuda/side_stream.cu" -w 1 --trials 10 --warmup 20 --iters 50 --timeout 20
  eval_json "gallery cuda/copy_allgather.cu W=2 (expect correct)" 0 -p coll_allgather \
    -s "$SRC/tests/candidates/cuda/copy_allgather.cu" -w 2 --trials 10 --warmup 20 --iters 50
}

stage_tp() {
  local problems=$("$PKB" list -c tp | awk 'NR>1 && $2 ~ /^tp_/ {print $2}')
  for w in 1 2 4; do
    for p in $problems; do step "dryrun $p W=$w" 0 "$PKB" dryrun -p $p -w $w; done
  done
}

stage_refs() {
  # Every problem's reference with its saved rank_*.pt checked in Python: the collectives
  # against their definition, the others recomputed in fp64 (tests/check_problem.py).
  local worlds=${1:-2,4} w p
  local rest=$("$PKB" list | awk 'NR>1 && $2 ~ /^[a-z]+_/ && $2 !~ /^(coll|test)_/ {print $2}')
  for w in ${worlds//,/ }; do
    for p in $COLL $rest; do
      rm -rf /tmp/dr
      step "dryrun $p W=$w" 0 "$PKB" dryrun -p $p -w $w --save-outputs /tmp/dr
      [ -d /tmp/dr ] || continue
      case $p in coll_*) check=check_dryrun.py ;; *) check=check_problem.py ;; esac
      step "  saved rank_*.pt checked" 0 python3 "$SRC/tests/$check" $p /tmp/dr $w
    done
  done
}

# batch P: the jobs on stdin (NAME<TAB>EXIT<TAB>COMMAND), P at a time (scripts/gpu-batch.py).
batch() {
  python3 "$SRC/scripts/gpu-batch.py" --summary "$SUM" --log "$LOG" --results "$RES" --end "$END" --parallel "$1"
}

GALLERY="--problem-dir $SRC/tests/candidates/problems --reference-lib $PWD/build-gpu/tests/libpkb_gallery_refs.so"

stage_allrefs() {
  # Every problem's reference but the collectives' (done by refs), each rank's saved
  # outputs recomputed in Python (tests/check_problem.py). Ranks sharing a GPU (W=4 on 2
  # GPUs) communicate through pkb's shared-memory communicator and need no MPS for a dryrun.
  # ONLY (a regex, optional) picks the problems, e.g. ONLY='^(cp|ep|sci)_'.
  local worlds=${1:-1,2,4} w p
  local problems=$("$PKB" list | awk 'NR>1 && $2 ~ /^[a-z]+_/ && $2 !~ /^(coll|test)_/ {print $2}' | grep -E "${ONLY:-.}")
  for w in ${worlds//,/ }; do
    for p in $problems; do
      printf "dryrun %s W=%s\t0\td=\$(mktemp -d) && %q dryrun -p %s -w %s --no-mps --trials 2 --save-outputs \$d && python3 %q %s \$d %s\n" \
        $p $w "$PKB" $p $w "$SRC/tests/check_problem.py" $p $w
    done
  done | batch 6
}

stage_pgallery() {
  # The CUDA gallery, old and new, with the expected verdicts (at W=1 skip_comm_one_rank
  # has no rank to skip and is correct), two evaluations at a time.
  local worlds=${1:-1,2} w
  for w in ${worlds//,/ }; do
    tail -n +2 "$SRC/tests/candidates/expected.tsv" | while read -r file problem verdict; do
      case $file in cuda/*) ;; *) continue ;; esac
      [ $w = 1 ] && [ $file = cuda/skip_comm_one_rank.cu ] && verdict=correct
      # Ranks sharing a GPU are timed (flag shared_gpu) but never held to the NVLink roofline.
      [ $w -gt $(nvidia-smi -L | wc -l) ] && [ $file = cuda/honest_allreduce.cu ] && verdict=correct
      case $verdict in correct) code=0 ;; wrong) code=1 ;; compile_error) code=3 ;; crash) code=4 ;;
        timeout) code=5 ;; integrity_violation) code=6 ;; esac
      printf "gallery %s W=%s (expect %s)\t%s\t%q %s eval --json {json} -p %s -s %q -w %s --trials 10 --warmup 20 --iters 50 --timeout 20\n" \
        $file $w $verdict $code "$PKB" "$GALLERY" $problem "$SRC/tests/candidates/$file" $w
    done
  done | batch 2
}

stage_candidates() {
  # Every example candidate over 100 trials at its default size and W (timed alone).
  local w=${1:-2} f p
  for f in "$SRC"/solutions_cuda/*.cu; do
    p=$(basename $f .cu)
    printf "example %s W=%s\t0\t%q eval --json {json} -p %s -s %q -w %s\n" $p $w "$PKB" $p "$f" $w
  done | batch 1
}

stage_family_candidates() {
  # The family candidates at W=2 (timed alone), over 100 trials. ARG: sizes (default
  # default,large). Where the machine has one GPU (ranks share it: the timings mean
  # nothing, and the reference took 1-5 s a call at large through gloo, for the trials, the
  # timed calls' checks and its own timing alike), the calls timed are few (20 + 20 at the
  # default size, 1 + 3 at large). FAMILY (a regex, optional) picks the candidates; TRIALS
  # (default 100) splits a long one over device calls (each run draws its own seed).
  local sizes=${1:-default,large} p size few=""
  for size in ${sizes//,/ }; do
    few=""
    [ "$(nvidia-smi -L | wc -l)" -lt 2 ] && few=$([ $size = large ] && echo "--warmup 1 --iters 3" || echo "--warmup 20 --iters 20")
    for p in rec_sharded_embedding_lookup ep_moe_dispatch_permute sp_gather_seq_scatter_heads sci_distributed_rfft2 \
             cp_ring_attention fsdp_zero2_adam_step; do
      [ -f "$SRC/solutions_cuda/$p.cu" ] && [[ $p =~ ${FAMILY:-.} ]] || continue
      printf "candidate %s %s W=2\t0\t%q eval --json {json} -p %s -s %q -w 2 --size %s --trials %s %s\n" $p $size "$PKB" $p \
        "$SRC/solutions_cuda/$p.cu" $size "${TRIALS:-100}" "$few"
    done
  done | batch 1
}

stage_strict_zero2() {
  # fsdp_zero2_adam_step's example with the mismatch allowance taken out of its spec
  # (a copy of the tree under /tmp/strict): what a failing trial looks like (one element
  # behind a ReLU at zero, or more), ARG trials (default 300) at the default size, W=2.
  local n=${1:-300} f
  rm -rf /tmp/strict && mkdir -p /tmp/strict
  for f in "$SRC"/*; do ln -s "$f" /tmp/strict/; done
  rm /tmp/strict/problems && cp -r "$SRC/problems" /tmp/strict/problems
  sed -i '/^mismatch = /d' /tmp/strict/problems/fsdp_zero2_adam_step.toml
  (export PKB_ROOT=/tmp/strict
   eval_json "fsdp_zero2_adam_step strict, $n trials W=2" 0 -p fsdp_zero2_adam_step \
     -s "$SRC/solutions_cuda/fsdp_zero2_adam_step.cu" -w 2 --trials $n --warmup 5 --iters 5)
}

stage_triton() {
  # The Triton examples alone (backends runs them beside CUDA and ThunderKittens).
  local worlds=${1:-1,2} w p
  for w in ${worlds//,/ }; do
    for p in coll_allreduce tp_gemm_allgather; do
      eval_json "$p triton W=$w" 0 -p $p -s "$SRC/solutions_triton/$p.py" -w $w
    done
  done
}

stage_sandbox() {
  # The example all-reduce with and without the sandbox (timings within noise), and the
  # sandbox probes on CUDA ranks (NCCL, CUDA IPC and MPS unharmed).
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
  # The references' communicators where ranks share a GPU: pkb's shared memory against
  # gloo, reference milliseconds a trial at --size large, W=2 (dryrun, 3 trials each).
  local p c
  for p in sci_distributed_rfft2 ep_moe_dispatch_permute fsdp_zero2_adam_step; do
    for c in shm gloo; do
      step "reference $p large W=2 over $c" 0 "$PKB" dryrun -p $p -w 2 --size large --trials 3 --ref-comm $c --no-mps
      tail -4 "$LOG" | awk -v s="$p $c" '$1 ~ /^[0-9]+$/ {printf "|  ↳ %s rank %s: %s ms a trial | | | |\n", s, $1, $2}' >>"$SUM"
    done
  done
}

stage_torchbw() {
  # torch.distributed's collectives beside pkb's references (bench/busbw_table.py).
  local w=${1:-2}
  step "torch.distributed collectives W=$w" 0 python3 -m torch.distributed.run --nproc_per_node $w \
    "$SRC/bench/torch_collectives.py" --mib 1,16,256,1024 --out "$OUT/torch_busbw.json"
  local p mib m
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

stage_busbw() {
  # The references' (NCCL's) and the example candidates' bus bandwidth at 1, 16 and 256 MiB
  # of data (nccl-tests sizes: per rank for all-reduce, broadcast, reduce; in total for
  # all-gather, reduce-scatter, all-to-all), rows of 1024 bf16.
  local w=${1:-4} p mib m
  for p in coll_allreduce coll_allgather coll_reducescatter coll_alltoall coll_broadcast; do
    for mib in 1 16 256; do
      m=$((mib * 512))
      case $p in coll_allgather | coll_reducescatter | coll_alltoall) m=$((m / w)) ;; esac
      eval_json "busbw $p $mib MiB W=$w" 0 -p $p -s "$SRC/solutions_cuda/$p.cu" -w $w --size M=$m,N=1024 \
        --trials 5
    done
  done
}

stage_tp_candidates() {
  for p in tp_gemm_allgather tp_allgather_gemm tp_gemm_reducescatter; do
    eval_json "eval $p default W=1" 0 -p $p -s "$SRC/solutions_cuda/$p.cu" -w 1
    eval_json "eval $p default W=2 shared" 0 -p $p -s "$SRC/solutions_cuda/$p.cu" -w 2
    eval_json "eval $p large W=1" 0 -p $p -s "$SRC/solutions_cuda/$p.cu" --size large -w 1
  done
}

stage_tp_shared() {
  # The overlap candidates with ranks sharing the GPU: default at W=4, large at W=2 and 4.
  # Large runs time 10 + 20 calls: the reference takes ~0.4 s a call there through gloo,
  # and shared timings mean nothing anyway. ARG: problems, comma-separated (default: all three).
  local problems=${1:-tp_gemm_allgather,tp_allgather_gemm,tp_gemm_reducescatter} p
  for p in ${problems//,/ }; do
    eval_json "eval $p default W=4 shared" 0 -p $p -s "$SRC/solutions_cuda/$p.cu" -w 4
    for w in 2 4; do
      eval_json "eval $p large W=$w shared" 0 -p $p -s "$SRC/solutions_cuda/$p.cu" --size large -w $w \
        --warmup 10 --iters 20
    done
  done
}

stage_spike34() {
  # Integrity v4's first look (issue 34): the judge's clock on the candidate's calls against
  # the rank's own events, without and with MPS; the reference as the candidate; the forgers;
  # late work through the judge's captures; six fresh timings of one reference.
  local T="$SRC/solutions_cuda/tp_gemm_allgather.cu" m k f
  for m in "" --mps; do
    eval_json "honest tp_gemm_allgather W=1 $m" 0 -p tp_gemm_allgather -s "$T" -w 1 $m
    eval_json "@reference tp_gemm_allgather W=1 $m" 0 -p tp_gemm_allgather -s @reference -w 1 $m
    eval_json "@reference coll_allreduce W=1 $m" 0 -p coll_allreduce -s @reference -w 1 $m
    eval_json "example coll_allreduce W=1 $m" 0 -p coll_allreduce -s "$SRC/solutions_cuda/coll_allreduce.cu" -w 1 $m
  done
  for f in forge_event_timer:6 forge_report:6 forge_captures:1; do
    eval_json "gallery ${f%%:*} W=1" ${f#*:} -p tp_gemm_allgather -s "$SRC/tests/candidates/cuda/${f%%:*}.cu" -w 1
  done
  for f in late_work side_stream capture_aware_side_stream; do
    eval_json "gallery $f W=1" 6 -p coll_allreduce -s "$SRC/tests/candidates/cuda/$f.cu" -w 1 --trials 10 --warmup 20 --iters 50 --timeout 20
  done
  eval_json "example coll_allreduce W=2 shared" 0 -p coll_allreduce -s "$SRC/solutions_cuda/coll_allreduce.cu" -w 2
  eval_json "honest tp_gemm_allgather large W=1" 0 -p tp_gemm_allgather -s "$T" -w 1 --size large
  for k in 1 2 3 4 5 6; do
    eval_json "fresh reference $k: honest tp_gemm_allgather W=1" 0 -p tp_gemm_allgather -s "$T" -w 1 --no-reference-cache
  done
}

stage_integrity34() {
  # Integrity v4 (issue 34): the honest GEMM and the forgers at the default size and at large
  # (W=1: judge and candidate rank beside it on the GPU, under pkb's private MPS), late work
  # through the judge's copies, and ten evaluations that each time the reference afresh.
  local T="$SRC/solutions_cuda/tp_gemm_allgather.cu" C="$SRC/tests/candidates/cuda" size f k
  for size in default large; do
    eval_json "honest tp_gemm_allgather $size W=1" 0 -p tp_gemm_allgather -s "$T" -w 1 --size $size
    for f in forge_event_timer:6 forge_report:6 forge_captures:1; do
      eval_json "forger ${f%%:*} $size W=1" ${f#*:} -p tp_gemm_allgather -s "$C/${f%%:*}.cu" -w 1 --size $size
    done
  done
  eval_json "@reference tp_gemm_allgather W=1" 0 -p tp_gemm_allgather -s @reference -w 1
  for f in late_work side_stream capture_aware_side_stream; do
    eval_json "gallery $f W=1" 6 -p coll_allreduce -s "$C/$f.cu" -w 1 --trials 10 --warmup 20 --iters 50 --timeout 20
  done
  for k in 1 2 3 4 5 6 7 8 9 10; do
    eval_json "fresh reference $k: honest tp_gemm_allgather W=1" 0 -p tp_gemm_allgather -s "$T" -w 1 \
      --no-reference-cache --trials 5
  done
}

stage_reference_all() {
  # Every problem's reference as its own candidate (issue 35): a sweep at W=1 with the
  # default settings (its report beside it), then every problem at W=2 with both ranks on
  # the GPU (verdicts; shared timings say nothing), in one start of the ranks.
  step "sweep @reference all W=1" 0 "$PKB" sweep --solutions @reference --problems all -w 1 --out "$OUT/reference_w1.jsonl"
  step "report of it" 0 "$PKB" report "$OUT/reference_w1.jsonl" --md "$OUT/reference_w1.md" --html "$OUT/reference_w1.html"
  step "eval @reference all W=2 shared, no timing" 0 "$PKB" eval -p all -s @reference -w 2 --no-timing \
    --json "$OUT/reference_w2.jsonl"
}

stage_final35() {
  # The reference as its candidate on CUDA with and without the sandbox (call 2 crashed in
  # its first collective), the timer forger again, then every problem's reference swept at
  # W=1 with the default settings, category by category (each category's batch is written
  # as it ends, so a call that runs out of time keeps what finished), and its report.
  local C="$SRC/tests/candidates/cuda" c
  eval_json "@reference tp_gemm_allgather W=1" 0 -p tp_gemm_allgather -s @reference -w 1
  eval_json "@reference tp_gemm_allgather W=1 --no-sandbox" 0 -p tp_gemm_allgather -s @reference -w 1 --no-sandbox
  eval_json "forger forge_event_timer default W=1" 6 -p tp_gemm_allgather -s "$C/forge_event_timer.cu" -w 1
  for c in coll tp sp cp pp dp fsdp ep gnn rec sci misc; do
    [ $((END - $(date +%s))) -lt 40 ] && break
    step "sweep @reference $c W=1" 0 "$PKB" sweep --solutions @reference --problems $c -w 1 --out "$OUT/reference_w1.jsonl"
  done
  END=$((END + 30))  # the report, whatever the sweeps left
  step "report of the sweep" 0 "$PKB" report "$OUT/reference_w1.jsonl" --md "$OUT/reference_w1.md" \
    --html "$OUT/reference_w1.html"
}

stage_debug35() {
  # Where @reference dies on CUDA (each rank now prints its frames on a fault), and the
  # timer forger once more.
  local C="$SRC/tests/candidates/cuda"
  eval_json "@reference tp_gemm_allgather W=1" 0 -p tp_gemm_allgather -s @reference -w 1 --trials 3
  eval_json "@reference cp_rope_allgather W=1" 0 -p cp_rope_allgather -s @reference -w 1 --trials 3
  CUDA_LAUNCH_BLOCKING=1 eval_json "@reference tp_gemm_allgather W=1 blocking" 0 -p tp_gemm_allgather -s @reference -w 1 --trials 3
  eval_json "forger forge_event_timer default W=1" 6 -p tp_gemm_allgather -s "$C/forge_event_timer.cu" -w 1
  eval_json "forger forge_event_timer large W=1" 6 -p tp_gemm_allgather -s "$C/forge_event_timer.cu" -w 1 --size large
  grep -A16 "pkb rank: " "$LOG" | head -80 >"$OUT/frames.txt"
}

stage_host35() {
  # Where @reference's launch-bound calls lose time on the candidate's side: each side's
  # host (enqueue time, CPU shares, context switches, the machine's busy share) in single
  # evaluations, without the sandbox, with one OpenMP thread, and in a sweep of tp.
  local p
  echo "| machine | | | $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r) |" >>"$SUM"
  for p in tp_allgather_gemm cp_rope_allgather dp_siglip_contrastive_loss; do
    eval_json "@reference $p W=1" 0 -p $p -s @reference -w 1 --trials 3 --no-reference-cache
  done
  eval_json "@reference cp_rope_allgather W=1 --no-sandbox" 0 -p cp_rope_allgather -s @reference -w 1 --trials 3 \
    --no-reference-cache --no-sandbox
  OMP_NUM_THREADS=1 eval_json "@reference cp_rope_allgather W=1 OMP_NUM_THREADS=1" 0 -p cp_rope_allgather -s @reference \
    -w 1 --trials 3 --no-reference-cache
  PKB_CACHE_DIR=/tmp/pkb-cache-host35 step "sweep @reference tp W=1" 0 "$PKB" sweep --solutions @reference --problems tp -w 1 \
    --out "$OUT/host_tp.jsonl"
  rm -rf /tmp/pkb-cache-host35
  python3 - "$OUT/host_tp.jsonl" >>"$SUM" <<'EOF'
import json, sys
print("\n| problem | cand us | ref us | cand enqueue | ref enqueue | cand thread cpu | cand switches (inv) | ref switches (inv) | busy during cand | busy during ref |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for l in open(sys.argv[1]):
    d = json.loads(l); t = d.get("timing") or {}; h = t.get("host") or {}
    c, r = h.get("candidate") or {}, h.get("reference") or {}
    f = lambda x, k, m=1, fmt="{:.1f}": fmt.format(m * x[k]) if k in x else "-"
    print(f"| {d['problem']} | {f(t.get('candidate', {}), 'median_us')} | {f(t.get('reference', {}), 'median_us')} | "
          f"{f(c, 'enqueue_median_us')} | {f(r, 'enqueue_median_us')} | {f(c, 'thread_cpu_share', 100, '{:.0f}%')} | "
          f"{c.get('switches_voluntary', '-')} ({c.get('switches_involuntary', '-')}) | "
          f"{r.get('switches_voluntary', '-')} ({r.get('switches_involuntary', '-')}) | "
          f"{f(c, 'machine_busy', 100, '{:.0f}%')} | {f(r, 'machine_busy', 100, '{:.0f}%')} |")
EOF
}

host_table() {
  # Both sides' host per call and probes, for the steps whose names start with $1 ("probe:"
  # unless given; "" for every step): a slow host may show in its probe.
  python3 - "$RES" "${1-probe:}" >>"$SUM" <<'EOF2'
import json, sys
print("\n| step | side | cpu | timed us | host us/call | cpu us/call | faults/call | switches in calls | probe cpu us | launch us | op us | alloc us | mem ns |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for l in open(sys.argv[1]):
    d = json.loads(l)
    if not d.get("step", "").startswith(sys.argv[2]): continue
    t = d.get("timing") or {}
    for side in ("reference", "candidate"):
        h = (t.get("host") or {}).get(side)
        if not h: continue
        pr = h.get("probe") or {}
        g = lambda x, k: f"{x[k]:.2f}" if isinstance(x.get(k), (int, float)) else "-"
        noisy = " NOISY" if side == "reference" and "noisy_reference" in (d.get("flags") or []) else ""
        print(f"| {d['step'][len(sys.argv[2]):].strip()}{noisy} | {side} | {h.get('cpu', '-')} | {g(t.get(side) or {}, 'median_us')} | "
              f"{g(h, 'enqueue_median_us')} | {g(h, 'enqueue_cpu_median_us')} | {g(h, 'call_minor_faults')} | "
              f"{h.get('call_switches', '-')} | {g(pr, 'cpu_us')} | {g(pr, 'launch_us')} | {g(pr, 'op_us')} | "
              f"{g(pr, 'alloc_us')} | {g(pr, 'mem_ns')} |")
EOF2
}

stage_host35f() {
  # Does a thread that waited before a call enqueue it slower? The machine's CPU facts and a
  # torch probe of five ways of waiting (bench/host_wake_probe.py); then @reference on four
  # launch-bound problems, both sides' host and (where the machine counts them) cycles and
  # instructions per call. (Call 19 ran it with odd calls waiting otherwise, a knob since
  # removed: the candidate polling for its judge's reply, the reference sleeping 200 us.)
  local p
  echo "| machine | | | $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r), $(lscpu | grep -E '^(Thread|Core|Socket|NUMA node\(s\))' | tr -s ' ' | tr '\n' ';') |" >>"$SUM"
  step "wake probe" 0 python3 bench/host_wake_probe.py --reps 300
  step "wake probe, pinned" 0 python3 bench/host_wake_probe.py --reps 300 --pin 5
  awk '/^=== wake probe/{on=1} on && /^(machine:|  [a-z_0-9]+: |pin |\| )/' "$LOG" >>"$SUM"
  for p in tp_lmhead_gemv_allgather tp_allgather_gemm dp_sam3_iou_suppression tp_vocab_parallel_logprob_topk; do
    eval_json "probe: $p" 0 -p $p -s @reference -w 1 --trials 3 --no-reference-cache
  done
  host_table
  python3 - "$RES" >>"$SUM" <<'EOF2'
import json, sys
print("\n| step | side | call cycles | instructions | GHz | IPC | probe GHz |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for l in open(sys.argv[1]):
    d = json.loads(l)
    for side in ("reference", "candidate"):
        h = ((d.get("timing") or {}).get("host") or {}).get(side) or {}
        c = h.get("call_counters") or {}
        g = lambda k: f"{c[k]:.3g}" if isinstance(c.get(k), (int, float)) else "-"
        print(f"| {d['step']} | {side} | {g('cycles_median')} | {g('instructions_median')} | {g('ghz_median')} | {g('ipc_median')} | {(h.get('probe') or {}).get('cpu_ghz', '-')} |")
EOF2
}

stage_host35c() {
  # Which process is slower and why: both sides' host probes (a fixed arithmetic loop, an
  # empty kernel launch, an ATen op, an allocation) beside their calls' host time, CPU
  # time and page faults; @reference without MPS; each CPU's speed on a fixed loop; and
  # fresh reference timings of tp_gemm_allgather with the honest example (issue 34).
  local p k
  echo "| machine | | | $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r), $(lscpu | grep -E '^(Thread|Core|Socket)' | tr -s ' ' | tr '\n' ';') |" >>"$SUM"
  for p in tp_allgather_gemm cp_rope_allgather dp_siglip_contrastive_loss; do
    eval_json "probe: @reference $p" 0 -p $p -s @reference -w 1 --trials 3 --no-reference-cache
  done
  eval_json "probe: @reference cp_rope_allgather --no-mps" 0 -p cp_rope_allgather -s @reference -w 1 --trials 3 \
    --no-reference-cache --no-mps
  for k in 1 2 3 4; do
    eval_json "probe: honest tp_gemm_allgather fresh $k" 0 -p tp_gemm_allgather -s "$SRC/solutions_cuda/tp_gemm_allgather.cu" \
      -w 1 --trials 3 --no-reference-cache
  done
  python3 - >>"$SUM" <<'EOF2'
import os, time
print("\n| CPU | fixed loop ms (median of 5, pinned) |\n| --- | --- |")
for c in sorted(os.sched_getaffinity(0)):
    os.sched_setaffinity(0, {c})
    v = []
    for _ in range(5):
        t = time.perf_counter(); x = 0
        for i in range(200000): x += i * i
        v.append(1e3 * (time.perf_counter() - t))
    print(f"| {c} | {sorted(v)[2]:.2f} |")
EOF2
  host_table
}

stage_host35e() {
  # The ranks' host allocations with fixed thresholds (worker.cpp): page faults a call on
  # both sides of host-sync-bound references, then a sweep of tp and dp as in call 15.
  local p k
  for p in dp_sam3_iou_suppression tp_vocab_parallel_logprob_topk_chunked; do
    for k in 1 2 3; do
      eval_json "probe: $p ($k)" 0 -p $p -s @reference -w 1 --trials 3 --no-reference-cache
    done
  done
  host_table
  CATEGORIES="tp dp" REF_W2= stage_final35b 150
}

stage_fresh10() {
  # Issue 34: ten evaluations that each time the reference afresh (one problem, the honest
  # example), each record's reference attempts (and fresh judges' redraws), stability and
  # speedup. FRESH_ARGS: more eval flags; FRESH_TAG: a name for this set.
  local T="$SRC/solutions_cuda/tp_gemm_allgather.cu" k
  echo "| machine | | | huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null), $(grep -h Speculation /proc/self/status | tr -s '\t ' ' ' | tr '\n' ';') |" >>"$SUM"
  for k in 1 2 3 4 5 6 7 8 9 10; do
    eval_json "fresh${FRESH_TAG-} reference $k: honest tp_gemm_allgather W=1" 0 -p tp_gemm_allgather -s "$T" -w 1 \
      --no-reference-cache --trials 5 ${FRESH_ARGS-}
  done
  host_table "fresh${FRESH_TAG-} "
}

stage_fresh10h() {
  # fresh10 with every rank's malloc on transparent huge pages (glibc's hugetlb tunable; the
  # machine's THP setting is madvise): does the per-process host disturbance follow how a
  # process's memory is mapped?
  GLIBC_TUNABLES=glibc.malloc.hugetlb=1 FRESH_TAG=h FRESH_ARGS="--pass-env GLIBC_TUNABLES" stage_fresh10
}

# A bench probe's table (bench/NAME.py) into the summary.
probe() {
  echo "| $1 (bench/$1.py) | | | |" >>"$SUM"
  python3 "$SRC/bench/$1.py" >>"$SUM" 2>>"$LOG"
}

stage_refcheck() {
  # Issue 37: rewritten references (ARG: their names, comma-separated) at large (the audit's
  # method), then each as its own candidate at the default size, W=1 and W=2 sharing the GPU.
  local p refs=${1//,/ }
  AUDIT_REST=0 AUDIT_MARGIN_S=${AUDIT_MARGIN_S:-40} stage_audit "^($(echo $refs | tr ' ' '|'))\$"
  for p in $refs; do
    eval_json "@reference $p W=1" 0 -p $p -s @reference -w 1 --trials 5
    eval_json "@reference $p W=2 shared" 0 -p $p -s @reference -w 2 --trials 5
  done
}

stage_disco37() { stage_refcheck sci_spherical_disco_conv; }

stage_refs37c() {
  # Issue 37 (session 7): where ep_load_balancing_loss spends its time at large, then the four
  # references rewritten in session 7.
  probe load_balancing_probe
  stage_refcheck ep_moe_combine_unpermute,cp_magi_tile_vae_decode,ep_load_balancing_loss,misc_gsplat_projection_all2all
}

stage_magi_probe() { probe magi_decode_probe; }
stage_combine_probe() { probe combine_probe; }
stage_combine37() { stage_refcheck ep_moe_combine_unpermute; }

stage_asym35() {
  # Issue 35: is the candidate rank's slower host (its calls' median return time 1.4-2.1x the
  # judge's in every W=1 sweep since call 11) the sandbox, MPS or the L2 flush's head start?
  # @reference on four launch-bound problems, each setting twice, fresh reference timings;
  # bench/host_asymmetry.py tables the results.
  local p mode k
  for p in tp_gemm_reducescatter coll_allgather pp_ring_attention_pp dp_ddp_adam_step; do
    for mode in default --no-sandbox --no-mps "--cache warm"; do
      for k in 1 2; do
        [ $((END - $(date +%s))) -lt 25 ] && return 0
        # shellcheck disable=SC2086
        eval_json "asym35 $p $mode $k" 0 -p $p -s @reference -w 1 --trials 3 --no-reference-cache \
          $([ "$mode" = default ] || echo $mode)
      done
    done
  done
}

stage_ctx35() {
  # Issue 35: is it the call's context? @reference at W=1, default against the judges' reference
  # loop doing the candidate rank's round trip to the parent before each call (PKB_X_JRT) and
  # against the candidate rank polling its request's acknowledgement too (PKB_X_CSPIN). The two
  # switches were an uncommitted build's (bench/results/h200-2026-12-04/call14_experiment.diff,
  # on 595bdd5); the second is the code since, so here they now change nothing.
  local problems=${1:-tp_allgather_gemm,tp_allgather_gemm_transposed,ep_load_balancing_loss,dp_grad_acc_loss_allreduce,fsdp_adam_unshard_allgather,fsdp_fp8_reducescatter_grads,tp_gemm_allreduce,ep_moe_lora_grad_allreduce,coll_alltoall,cp_hyena_conv1d_halo} k v
  for k in 1 2; do
    for v in default PKB_X_JRT PKB_X_CSPIN; do
      [ $((END - $(date +%s))) -lt 60 ] && return 0
      step "ctx35 $v $k" 0 env $([ $v = default ] || echo $v=1) "$PKB" eval -p "$problems" -s @reference -w 1 --trials 3 \
        --no-reference-cache --json "$OUT/ctx35_${v}_$k.jsonl"
    done
  done
}

stage_probes37() {
  # Issue 37: the three references whose "library limit" or pass count was claimed unprobed,
  # step by step at --size large beside the other ATen compositions.
  probe vocab_ce_probe
  probe rope_allgather_probe
  probe int8_quant_probe
}

stage_refs37d() {
  # Issue 35: which of the VM's CPUs slow each other (a hidden shared core); issue 37: the
  # three references rewritten after probes37 (audit at large, @reference W=1 and W=2
  # shared), and their saved outputs on CUDA at W=1 recomputed in Python (the fused
  # cross-entropy runs only there).
  probe cpu_sibling_probe
  stage_refcheck tp_vocab_parallel_cross_entropy,cp_rope_allgather,dp_int8_quant_grad_allreduce
  ONLY='^(tp_vocab_parallel_cross_entropy|cp_rope_allgather|dp_int8_quant_grad_allreduce)$' stage_allrefs 1
}

stage_place35() {
  # Issue 35: which CPUs slow which (every pair, the allocator), then @reference on sp and
  # fsdp as the sweep runs them, on any CPU and then with every pkb process on CPUs 0-2:
  # does where the processes run set the two sides' host speeds?
  echo "| cpu_sibling_probe --matrix | | | |" >>"$SUM"
  python3 "$SRC/bench/cpu_sibling_probe.py" --matrix >>"$SUM" 2>>"$LOG"
  local c cpus
  for cpus in all 0-2; do
    for c in sp fsdp; do
      if [ $cpus = all ]; then
        step "sweep @reference $c, any CPU" 0 "$PKB" sweep --solutions @reference --problems $c -w 1 --out "$OUT/place_$cpus.jsonl"
      else
        step "sweep @reference $c, CPUs $cpus" 0 taskset -c $cpus "$PKB" sweep --solutions @reference --problems $c -w 1 --out "$OUT/place_$cpus.jsonl"
      fi
    done
    echo "| placement $cpus | | | $(python3 "$SRC/bench/reference_as_candidate.py" "$OUT/place_$cpus.jsonl" | tail -2 | tr '\n' ' ') |" >>"$SUM"
  done
}

stage_fp8_probe() { probe fp8_quant_probe; }  # Issue 37: tp_fp8_block_quant_allgather at large

stage_shared2() {
  # W=2 on the one GPU with timing: the honest example and the reference as the candidate.
  eval_json "honest tp_gemm_allgather W=2 shared" 0 -p tp_gemm_allgather -s "$SRC/solutions_cuda/tp_gemm_allgather.cu" -w 2 --trials 5
  eval_json "@reference tp_gemm_allgather W=2 shared" 0 -p tp_gemm_allgather -s @reference -w 2 --trials 5
}

stage_topk_probe() {
  # Issue 37: what a top-k of the vocab filters' rows costs against one pass over them.
  echo "| top-k probe (bench/topk_probe.py) | | | |" >>"$SUM"
  python3 "$SRC/bench/topk_probe.py" >>"$SUM" 2>>"$LOG"
}

stage_final35b() {
  # Every problem's reference as its candidate: swept at W=1 with the sweep's defaults,
  # category by category (each batch's lines are written as it ends), with its report; then
  # the verdicts (no timing) of all 87 at W=2 sharing the GPU, in one grouped eval.
  local c budget=${1:-400}
  local w1_end=$(($(date +%s) + budget))
  for c in ${CATEGORIES:-coll tp sp cp pp dp fsdp ep gnn rec sci misc}; do
    [ $((w1_end - $(date +%s))) -lt 20 ] && break
    step "sweep @reference $c W=1" 0 "$PKB" sweep --solutions @reference --problems $c -w 1 --out "$OUT/reference_w1.jsonl"
  done
  step "report of the sweep" 0 "$PKB" report "$OUT/reference_w1.jsonl" --md "$OUT/reference_w1.md" \
    --html "$OUT/reference_w1.html"
  [ -n "${REF_W2-1}" ] && step "@reference all W=2 shared, no timing" 0 "$PKB" eval -p all -s @reference -w 2 --no-timing --trials 10 \
    --json "$OUT/reference_w2.jsonl"
}

stage_final35c() {
  # Issue 35's sweep (final35b, ARG: its W=1 seconds), then every W=1 result outside
  # [0.95, 1.05] evaluated again with --profile-ops, quickest first: where each side's host
  # time a call goes, op by op (bench/ops_table.py: off_ops.md).
  stage_final35b "${1:-380}"
  local off
  off=$(python3 -c '
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
off = [r for r in rs if r.get("verdict") == "correct" and r.get("speedup") and not 0.95 <= r["speedup"] <= 1.05]
print(",".join(r["problem"] for r in sorted(off, key=lambda r: r.get("wall_s", 0))))' "$OUT/reference_w1.jsonl" 2>>"$LOG")
  echo "| off [0.95, 1.05] in the sweep | | | $(echo "$off" | tr ',' ' ' | wc -w) problems |" >>"$SUM"
  [ -n "$off" ] && step "@reference --profile-ops W=1, the sweep's off 1.0" 0 "$PKB" eval -p "$off" -s @reference -w 1 \
    --trials 3 --profile-ops --json "$OUT/off_ops.jsonl"
  [ -s "$OUT/off_ops.jsonl" ] && python3 "$SRC/bench/ops_table.py" "$OUT/off_ops.jsonl" >"$OUT/off_ops.md" 2>>"$LOG"
}

stage_pin35() {
  # Issue 35: does pinning each side's timed thread to one CPU (--pin-cpus, launch/cpus.hpp)
  # bring the two sides' timings together? @reference over launch-bound categories (arg,
  # default coll,sp,dp,fsdp,rec) at W=1, every run timing its references afresh, unpinned
  # and pinned runs alternating (the machine drifts between runs); bench/pin_ab.py's table.
  local problems=${1:-coll,sp,dp,fsdp,rec} k mode runs=()
  for k in 1 2; do
    for mode in off auto; do
      step "@reference $problems W=1 --pin-cpus $mode ($k)" 0 "$PKB" eval -p "$problems" -s @reference -w 1 \
        --no-reference-cache --trials 10 --pin-cpus $mode --json "$OUT/pin_${mode}_$k.jsonl"
      [ -f "$OUT/pin_${mode}_$k.jsonl" ] && runs+=("$mode=$OUT/pin_${mode}_$k.jsonl")
    done
  done
  python3 "$SRC/bench/pin_ab.py" "${runs[@]}" >"$OUT/pin_ab.md"
  tail -4 "$OUT/pin_ab.md" | sed 's/^/| pin_ab /' >>"$SUM"
}

stage_ops35() {
  # Issue 35: which op the same code spends longer in on the candidate rank's side. @reference
  # with --profile-ops (jobs/op_profile.hpp) at W=1 on the problems whose candidate side took
  # 1.6-2.9x the judges' host a call in call 7 of 12-04 (probes agreeing), two controls near
  # 1.0 last, twice; bench/ops_table.py's table. Then bench/host_wake_probe.py: does a stream
  # held by a dependency (as the gate holds the candidate's on `go`) enqueue slower?
  local problems=${1:-ep_load_balancing_loss,tp_allgather_gemm,tp_allgather_gemm_transposed,tp_vocab_parallel_cross_entropy,dp_siglip_contrastive_loss,dp_int8_quant_grad_allreduce,fsdp_fp8_reducescatter_grads,fsdp_adam_unshard_allgather,fsdp_tp_2d_mlp,tp_gemm_allgather,ep_moe_narrow} k
  for k in 1 2; do
    step "@reference --profile-ops W=1 ($k)" 0 "$PKB" eval -p "$problems" -s @reference -w 1 --trials 3 --profile-ops \
      --json "$OUT/ops35_$k.jsonl"
  done
  python3 "$SRC/bench/ops_table.py" "$OUT"/ops35_*.jsonl >"$OUT/ops35.md" 2>>"$LOG"
  step "wake probe, pinned to 15" 0 python3 "$SRC/bench/host_wake_probe.py" --reps 200 --pin 15
}

stage_pinned_examples() {
  # Issue 35: every example candidate judged with the timed threads pinned (the default),
  # W=1, a short run each: CUDA, Triton (a Python interpreter and Triton's compiler on the
  # candidate rank's one CPU) and ThunderKittens; then the side-stream saboteur.
  # ARG: the CUDA example to start from (the ones before it sort first and ran already).
  local f from=${1:-}
  export PKB_TK_DIR=$PWD/.gpu/tk
  for f in "$SRC"/solutions_cuda/*.cu "$SRC"/solutions_triton/*.py "$SRC"/solutions_tk/*.cu; do
    [[ $f == */solutions_cuda/* && $(basename "$f") < $from ]] && continue
    eval_json "pinned $(basename "$(dirname "$f")")/$(basename "$f") W=1" 0 -p "$(basename "${f%.*}")" -s "$f" -w 1 --trials 10
  done
  stage_escape_only
  echo "| CPUs line | | | $(grep -m1 '^CPUs:' "$LOG") |" >>"$SUM"
}

stage_final37() {
  # The references changed for issue 37 at --size large (the audit's method), then whether
  # the sandbox is what makes @reference's calls host-bound on the candidate's side.
  AUDIT_REST=0 AUDIT_MARGIN_S=${AUDIT_MARGIN_S:-70} stage_audit \
    '^(tp_rmsnorm_allreduce|tp_reducescatter_rmsnorm|fsdp_clip_grad_norm|fsdp_clip_grad_norm_ep|tp_fp8_block_quant_allgather|dp_int8_quant_grad_allreduce|sci_distributed_rfft2|sci_distributed_irfft2|dp_dinov2_sinkhorn_knopp)$'
  local k
  for k in 1 2; do
    eval_json "@reference tp_gemm_allgather W=1 ($k)" 0 -p tp_gemm_allgather -s @reference -w 1 --trials 3
    eval_json "@reference tp_gemm_allgather W=1 --no-sandbox ($k)" 0 -p tp_gemm_allgather -s @reference -w 1 --trials 3 --no-sandbox
  done
}

stage_eval() {
  local worlds=${1:-1,2,4} w
  for p in $COLL; do
    for w in ${worlds//,/ }; do
      eval_json "eval $p W=$w" 0 -p $p -s "$SRC/solutions_cuda/$p.cu" -w $w
    done
  done
}

stage_escape_only() {
  eval_json "gallery cuda/side_stream.cu (expect integrity_violation)" 6 -p coll_allreduce \
    -s "$SRC/tests/candidates/cuda/side_stream.cu" -w 2 --trials 10 --warmup 20 --iters 50 --timeout 20
}

stage_integrity() {
  # Issue 25: saboteurs that keep the GPU busy once their timed calls are over (spin kernels
  # from a host thread; a persistent kernel left resident), against the honest example, each
  # with the reference timed anew; then one sweep with a saboteur first and two honest
  # candidates after it (the reference timed once, by the saboteur's judges). W=1, and W=2
  # with ranks sharing the GPU. ARG: W list (default 1,2).
  local worlds=${1:-1,2} w c
  for w in ${worlds//,/ }; do
    for c in solutions_cuda/coll_allreduce.cu tests/candidates/cuda/spin_saboteur.cu tests/candidates/cuda/resident_kernel.cu; do
      eval_json "integrity $(basename $c) W=$w (alone)" 0 -p coll_allreduce -s "$SRC/$c" -w $w --no-reference-cache \
        --trials 10 --warmup 20 --iters 50
    done
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
          f" (cached {t.get('reference_cached')}), cand {t.get('candidate', {}).get('median_us', 0):.1f} us, "
          f"speedup {d.get('speedup') or 0:.2f}x, wall {d.get('wall_s', 0):.1f} s, costs {json.dumps(d.get('costs_s', {}))} |")
    d["step"] = f"integrity sweep W={sys.argv[2]}"
    print(json.dumps(d), file=open("/tmp/isweep/lines.jsonl", "a"))
EOF2
    cat /tmp/isweep/lines.jsonl >>"$RES" 2>/dev/null
  done
}

stage_large() {
  # Issue 26: the family examples whose large presets ran out of memory or took hours,
  # with pkb's time budgets (defaults), and tp_gemm_allgather large as before; W=1.
  local p
  for p in fsdp_zero2_adam_step cp_ring_attention tp_gemm_allgather; do
    step "plan $p large W=1" 0 "$PKB" eval -p $p -s "$SRC/solutions_cuda/$p.cu" -w 1 --size large --dry-plan
    eval_json "large $p W=1 (default budgets)" 0 -p $p -s "$SRC/solutions_cuda/$p.cu" -w 1 --size large
  done
}

stage_large_all() {
  # Issue 26's target: every CUDA example at --size large, W=1, with pkb's default counts and
  # time budgets (what a user gets), each within 10 minutes. The slowest known (the ring
  # attention, ~170 s) goes last.
  local f p
  for f in $(ls "$SRC"/solutions_cuda/*.cu | grep -v cp_ring_attention) "$SRC/solutions_cuda/cp_ring_attention.cu"; do
    p=$(basename "$f" .cu)
    eval_json "large $p W=1 (default budgets)" 0 -p $p -s "$f" -w 1 --size large
  done
}

stage_families() {
  # Several problems in turn on one start of the ranks (dryrun and validate with a category
  # or 'all'): every reference at W=1 through NCCL, twice in a row on the same ranks' NCCL
  # communicators; then validate at W=2, two ranks sharing the GPU through pkb's
  # shared-memory communicator (problems W=2 does not fit are left out, each with a line).
  step "dryrun all W=1 (one rank, every problem in turn)" 0 "$PKB" dryrun -p all -w 1 --trials 2
  step "validate all W=2 shared (one start of the ranks)" 0 "$PKB" validate all -w 2 --trials 2
}

stage_audit() {
  # Issue 26: every reference alone at --size large, W=1 (bench/reference_audit.sh), in what is
  # left of BUDGET_S less AUDIT_MARGIN_S (default 60), each reference's timed calls cut off after 3 s (at least 3);
  # ARG (optional): a regex of problems to audit first, the rest after it while time lasts
  # (AUDIT_REST=0: only the first). The table lands in $OUT/reference_audit_h200.md.
  local first=${1:-} left=$((END - $(date +%s) - ${AUDIT_MARGIN_S:-60})) t0=$(date +%s)
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

stage_backends() {
  # The CUDA, Triton and ThunderKittens examples side by side (100 trials, timed), and pkb's
  # own cost of a Python call: an empty pkb_run in Python against an empty CUDA one
  # (bench/overhead). ARG: world sizes (default 1,2). ThunderKittens' headers: .gpu/tk.
  local worlds=${1:-1,2} w p
  export PKB_TK_DIR=$PWD/.gpu/tk
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
  local files="1_allreduce_cuda:coll_allreduce 14_gemm_allscatter_cuda:tp_gemm_allgather
    14_gemm_allscatter_triton:tp_gemm_allgather 27_moe_all2all_primitive_cuda:ep_moe_all2all 41_ddp_cuda:dp_ddp_adam_step"
  rm -rf "$cold"
  for f in $files; do
    step "build ${f%%:*} cold" 0 env PKB_CACHE_DIR=$cold "$PKB" build -s "$o/${f%%:*}.py"
    sed -n 's/^line \([0-9]*\): extension \(.*\)$/|  ↳ line \1: \2 | | | |/p' \
      "$(ls -t $cold/build/*/build.log 2>/dev/null | head -1)" >>"$SUM" 2>/dev/null
  done
  for f in $files; do step "build ${f%%:*} cached" 0 env PKB_CACHE_DIR=$cold "$PKB" build -s "$o/${f%%:*}.py"; done
  # The evaluations and the sweep use those builds (the same cache).
  for w in ${worlds//,/ }; do
    for f in $files; do
      p=${f#*:}
      PKB_CACHE_DIR=$cold eval_json "original ${f%%:*} $p W=$w" 0 -p $p -s "$o/${f%%:*}.py" -w $w
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

build
for s in "$@"; do  # NAME or NAME:ARG
  echo "| **stage $s** | | | |" >>"$SUM"
  if [[ $s == *:* ]]; then "stage_${s%%:*}" "${s#*:}"; else "stage_$s"; fi
done
cat "$SUM"
