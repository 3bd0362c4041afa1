#!/usr/bin/env bash
# pkb sweep --launcher slurm --submit on a real one-node Slurm cluster: brings up munged,
# slurmctld and slurmd (Debian's packages) with a generated slurm.conf for this machine
# (its hostname and CPUs, from `slurmd -C`), submits the array job, waits for it, merges
# the task files with pkb report and checks every evaluation is there once. Then pkb eval
# --launcher slurm: one evaluation as a job, its verdict and result back here (a correct
# candidate, exit 0; a wrong one, exit 1). Tears it all down. Needs root; skips (exit 77) without it or the packages, except under CI, where
# scripts/test.sh installs them and a skip would hide a broken test.
#   slurm_test.sh PKB_BIN
set -euo pipefail
pkb=$1
src=$(cd "$(dirname "$0")/../.." && pwd)

skip() {
  if [ "${CI:-}" = true ]; then echo "FAIL: $1 (CI must run this test)"; exit 1; fi
  echo "SKIP: $1"; exit 77
}
[ "$(id -u)" = 0 ] || skip "the Slurm daemons run as root here; run as root"
for tool in munged mungekey slurmctld slurmd sbatch sinfo scancel python3; do
  command -v "$tool" >/dev/null || skip "$tool is missing (Debian packages munge slurmctld slurmd slurm-client)"
done

work=$(mktemp -d /tmp/pkb-slurm.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  local rc=$?
  scancel --quiet --full --user=root 2>/dev/null || true
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ $rc != 0 ]; then
    for log in "$work"/*.log "$work"/results/slurm-*.log "$work"/eval-*/slurm-*.log "$work"/eval-*.out; do
      [ -f "$log" ] && { echo "--- $log"; tail -n 30 "$log"; }
    done
  fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

# munge, on a key and socket of its own: nothing of the machine's is touched.
mungekey --create --keyfile="$work/munge.key" --force
munged --foreground --force --key-file="$work/munge.key" --socket="$work/munge.sock" \
  --pid-file="$work/munged.pid" --log-file="$work/munged.log" --seed-file="$work/munge.seed" \
  >"$work/munged.out.log" 2>&1 &
pids+=($!)

host=$(hostname -s)
node=$(slurmd -C | head -n 1)            # NodeName=<host> CPUs=... RealMemory=...
port=$((20000 + RANDOM % 20000))
mkdir -p "$work/state" "$work/spool"
cat > "$work/slurm.conf" <<EOF
ClusterName=pkbtest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge.sock
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$work/slurm.conf

for _ in $(seq 50); do [ -S "$work/munge.sock" ] && break; sleep 0.1; done
slurmctld -D -i -f "$SLURM_CONF" >"$work/slurmctld.out.log" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$work/slurmd.out.log" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 120); do
  state=$(sinfo -h -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.5
done
[ "$state" = idle ] || { echo "FAIL: the node never became idle (state '$state')"; exit 1; }
echo "slurm: node $host idle"

# Candidates as pkb generate lays them out: four correct collectives and a wrong one.
sol=$work/solutions_cpu/slurm-run
for p in coll_allreduce coll_allgather coll_broadcast coll_reduce; do
  mkdir -p "$sol/$p"
  cp "$src/solutions_cpu/$p.cpp" "$sol/$p/sample_0.cpp"
done
cp "$src/tests/sweep/candidates/zeros.cpp" "$sol/coll_allreduce/sample_1.cpp"

cd "$work"
"$pkb" sweep --launcher slurm --submit --wait --nodes 2 --solutions solutions_cpu --problems coll \
  --device cpu -w 2 --trials 2 --warmup 1 --iters 3 --timeout 60 --sbatch=--time=15 --out results
ls results/task_0.jsonl results/task_1.jsonl >/dev/null
"$pkb" report results --json report.json >/dev/null

python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
report = json.load(open(f"{work}/report.json"))
lines = [json.loads(l) for f in ("task_0", "task_1") for l in open(f"{work}/results/{f}.jsonl")]
keys = [l["sweep"]["task"] for l in lines]
verdicts = sorted(f'{l["problem"]}/{l["sweep"]["sample"]}={l["verdict"]}' for l in lines)
want = ["coll_allgather/0=correct", "coll_allreduce/0=correct", "coll_allreduce/1=wrong",
        "coll_broadcast/0=correct", "coll_reduce/0=correct"]
problems = []
if verdicts != want: problems.append(f"verdicts {verdicts}, expected {want}")
if len(set(keys)) != len(keys): problems.append("an evaluation was recorded twice")
# Every evaluation draws its own inputs (no --seed): a candidate cannot replay another's answers.
if len({l["run"]["seed"] for l in lines}) != len(lines): problems.append("two evaluations shared a seed")
if report["evaluations"] != 5 or len(report["files"]) != 2 or report["duplicates"] != 0:
    problems.append(f"report: {report['evaluations']} evaluations from {len(report['files'])} files")
for p in problems: print("FAIL:", p)
sys.exit(1 if problems else 0)
EOF

# pkb eval --launcher slurm, on the same path: the job's folder is seen by both sides (here
# they are one machine), and the verdict comes back as the exit code.
evaluate() {  # evaluate NAME CANDIDATE: runs in the job folder eval-NAME, prints its exit code
  local rc=0
  "$pkb" eval --launcher slurm -p coll_allreduce -s "$2" --device cpu -w 2 --trials 2 --warmup 1 --iters 3 \
    --timeout 60 --sbatch=--time=5 --slurm-dir "eval-$1" --json "eval-$1.json" >"eval-$1.out" 2>&1 || rc=$?
  echo $rc
}
rc=$(evaluate ok "$sol/coll_allreduce/sample_0.cpp")
[ "$rc" = 0 ] || { echo "FAIL: pkb eval --launcher slurm of a correct candidate exited $rc"; cat eval-ok.out; exit 1; }
rc=$(evaluate wrong "$sol/coll_allreduce/sample_1.cpp")
[ "$rc" = 1 ] || { echo "FAIL: pkb eval --launcher slurm of a wrong candidate exited $rc"; cat eval-wrong.out; exit 1; }
grep -q "^verdict: correct" eval-ok.out || { echo "FAIL: no verdict printed"; cat eval-ok.out; exit 1; }
python3 - "$work" <<'EOF'
import json, os, sys
work = sys.argv[1]
problems = []
for name, verdict in (("ok", "correct"), ("wrong", "wrong")):
    r = json.load(open(f"{work}/eval-{name}.json"))
    if r["verdict"] != verdict: problems.append(f"{name}: verdict {r['verdict']}, expected {verdict}")
    if r["run"]["world"] != 2 or r["run"]["device"] != "cpu": problems.append(f"{name}: run {r['run']}")
    if not r.get("slurm", {}).get("job"): problems.append(f"{name}: no Slurm job id in the result")
    if not os.path.exists(f"{work}/eval-{name}/eval.sbatch"): problems.append(f"{name}: no eval.sbatch")
for p in problems: print("FAIL:", p)
sys.exit(1 if problems else 0)
EOF
echo "1 passed, 0 failed: a 2-task Slurm array job evaluated 5 candidates, merged by pkb report;" \
  "pkb eval --launcher slurm brought a correct and a wrong verdict back"
