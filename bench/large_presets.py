"""Device memory a rank holds at a problem's `large` preset, by arithmetic from its spec, for
every world size its constraints allow up to 8: bench/results/large_presets.md.

A rank holds one set of the candidate's inputs and outputs, the reference's own inputs and
outputs (pkb keeps both sides apart), and the reference's working memory while it runs
(temporaries, communication buffers, fp32 copies), estimated per problem below from reading
reference/<slug>.cpp. Several input sets kept for timing are the memory plan's business
(pkb plan), not counted here. Host tensors (host = true) are left out; outputs whose size
depends on data (shape "<= ...") count their capacity.

usage: python3 bench/large_presets.py [--md] [--roofline] [--size large] [--max-world 8]
"""
import argparse
import math
import os
import re
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GIB = 1 << 30
H200_GIB = 139.0  # what one H200 leaves to a process (141 GB less the CUDA context)
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp64": 8, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
               "uint8": 1, "bool": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "complex64": 8, "complex128": 16}


# ---- the spec formulas (src/spec/expr.cpp): + - * / // % ( ), comparisons, && || !, and
# min max abs floor ceil roundup cdiv log2 pow if --------------------------------------------

def _if(c, a, b):
    return a if c else b


def _roundup(a, b):
    return math.ceil(a / b) * b


def _cdiv(a, b):
    return math.ceil(a / b)


FUNCS = {"min": min, "max": max, "abs": abs, "floor": math.floor, "ceil": math.ceil, "log2": math.log2,
         "pow": pow, "roundup": _roundup, "cdiv": _cdiv, "_if": _if}


def to_python(expr):
    e = str(expr)
    e = e.replace("&&", " and ").replace("||", " or ")
    e = re.sub(r"!(?!=)", " not ", e)
    e = re.sub(r"\bif\s*\(", "_if(", e)
    return e


def evaluate(expr, env):
    return eval(to_python(expr), {"__builtins__": {}}, {**FUNCS, **env})


def variables(spec, size, w, rank):
    """Sizes, W, rank and the [vars] (in any order), as src/spec/spec.cpp's vars_for."""
    env = dict(spec["sizes"][size])
    env.update(W=w, rank=rank)
    pending = dict(spec.get("vars", {}))
    while pending:
        done = []
        for name, f in pending.items():
            try:
                env[name] = evaluate(f, env)
                done.append(name)
            except NameError:
                pass
        if not done:
            raise SystemExit(f"{spec['slug']}: vars {sorted(pending)} do not resolve")
        for name in done:
            del pending[name]
    return env


def allowed(spec, size, w):
    world = spec.get("world", {})
    if not world.get("min", 1) <= w <= world.get("max", 64):
        return False
    env = variables(spec, size, w, 0)
    if not all(evaluate(c, env) for c in spec.get("constraints", [])):
        return False
    # every shape must come out whole and non-negative on every rank
    for r in range(w):
        env = variables(spec, size, w, r)
        for t in spec.get("inputs", []) + spec.get("outputs", []):
            for d in t["shape"]:
                v = evaluate(str(d).lstrip("<= "), env)
                if v < 0 or abs(v - round(v)) > 1e-9:
                    return False
    return True


def tensor_bytes(t, env, spec):
    dt = t.get("dtype", "dt")
    if dt == "dt":
        dt = spec.get("dtype", "bf16")
    n = 1
    for d in t["shape"]:
        n *= int(round(evaluate(str(d).lstrip("<= "), env)))
    return n * DTYPE_BYTES[dt]


def side_bytes(spec, env):
    """(device input bytes, device output bytes) of one rank."""
    ins = sum(tensor_bytes(t, env, spec) for t in spec.get("inputs", []) if not t.get("host", False))
    outs = sum(tensor_bytes(t, env, spec) for t in spec.get("outputs", []) if not t.get("host", False))
    return ins, outs


# ---- the references' working memory ---------------------------------------------------------
# Each estimate is what reference/<slug>.cpp allocates beyond its inputs and outputs while a
# call runs, at the peak, in bytes, from the sizes (env, with W and rank) and the spec's dt
# size `b`. `io` is (input bytes, output bytes) of the rank. Problems not listed: the
# reference keeps about one copy of its inputs and outputs (a gathered or sent buffer, an
# fp32 upcast of a dt tensor counts twice): 2 x (inputs + outputs).

def _flash_ring(B, S, H, D, b):
    # ring attention: the fp32 accumulator and its lse, the K/V blocks in flight (two sent,
    # two received), one block's dt output
    return B * S * H * D * (4 + 4 * b + b) + B * S * H * 4 * 2


WORK = {
    # --- attention (flash kernels: no score matrices) ---
    "cp_ring_attention": lambda e, b, io: _flash_ring(e["B"], e["S"], e["H"], e["D"], b),
    # qkv (3 heads' worth), the ring on the local heads, ctx and the pre-all-reduce output
    "cp_ring_attention_tp": lambda e, b, io: (3 * e["B"] * e["S"] * e["NH"] // e["tp"] * e["D"] * b
                                              + _flash_ring(e["B"], e["S"], e["NH"] // e["tp"], e["D"], b)
                                              + e["B"] * e["S"] * e["NH"] * e["D"] * b),
    "pp_ring_attention_pp": lambda e, b, io: (3 * e["B"] * e["S"] * e["Hd"] * b
                                              + _flash_ring(e["B"], e["S"], e["Hd"] // e["D"], e["D"], b)
                                              + 2 * e["B"] * e["S"] * e["Hd"] * b),
    # backward: the fp32 dq, dk, dv accumulators and the dk, dv in flight, a block's dt
    # grads, the K/V blocks in flight; make_inputs' forward (explicit fp32 attention over
    # the replica's whole sequence, 2^27-element score chunks) is larger at W <= 2
    "cp_ring_attention_bwd_dp": lambda e, b, io: max(
        e["B"] * e["S"] * e["H"] * e["D"] * (5 * 4 + 3 * b + 4 * b),
        2 * (1 << 27) * 4 + 3 * e["B"] * e["T"] * e["H"] * e["D"] * 4),
    # Ulysses: qkv (3 x), the all-to-all buffers (q, kv stacked, sent and received), out
    "cp_ulysses_attention": lambda e, b, io: 12 * e["B"] * e["S"] * e["NH"] * e["D"] * b,
    # --- optimizer: Adam's clones of the shard's state; make_inputs' fp32 temporaries ---
    "fsdp_adam_unshard_allgather": lambda e, b, io: 3 * e["P"] * b + 4 * e["P"] * 4,
    # --- Kalman: bmm(k, k^T) and the two products of the P update, (NB, BS, BS) fp64 ---
    "sci_kalman_filter_optimizer": lambda e, b, io: 3 * e["NB"] * e["BS"] * e["BS"] * 8,
    # --- MoE: the routed rows (M top_k of them) as sent, received, grouped, computed,
    # returned, and the fp32 unpermute; the weights are read in place ---
    "ep_fused_moe_fwd": lambda e, b, io: (6 * b + 8) * e["M"] * e["top_k"] * e["N"] + 4 * e["M"] * e["N"],
    "ep_fused_moe_fwd_lora": lambda e, b, io: (6 * b + 8) * e["M"] * e["top_k"] * e["N"] + 4 * e["M"] * e["N"],
}


def working_bytes(spec, env, b, io):
    """The reference's working memory: its spec's [memory] reference_peak (which counts the
    inputs and outputs too) where it declares one, else WORK's estimate, else the default."""
    peak = spec.get("memory", {}).get("reference_peak")
    if peak is not None:
        return max(0, int(evaluate(peak, {**env, "dt_bytes": b})) - io[0] - io[1])
    f = WORK.get(spec["slug"])
    if f is None:
        return 2 * (io[0] + io[1])
    return int(f(env, b, io))


# ---- the table -----------------------------------------------------------------------------

def load_specs():
    specs = []
    d = os.path.join(ROOT, "problems")
    for name in sorted(os.listdir(d)):
        if name.endswith(".toml"):
            with open(os.path.join(d, name), "rb") as f:
                specs.append(tomllib.load(f))
    return specs


def rows(size, max_world):
    out = []
    for spec in load_specs():
        if size not in spec.get("sizes", {}):
            continue
        b = DTYPE_BYTES[spec.get("dtype", "bf16")]
        worlds = [w for w in range(1, max_world + 1) if allowed(spec, size, w)]
        per_w = []
        for w in worlds:
            worst = None
            for r in range(w):
                env = variables(spec, size, w, r)
                io = side_bytes(spec, env)
                work = working_bytes(spec, env, b, io)
                total = 2 * (io[0] + io[1]) + work
                if worst is None or total > worst[3]:
                    worst = (io[0], io[1], work, total)
            per_w.append((w, worst))
        out.append((spec["slug"], per_w))
    return out


def fmt(x):
    return f"{x / GIB:.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="large")
    ap.add_argument("--max-world", type=int, default=8)
    ap.add_argument("--md", action="store_true", help="a markdown table (else plain text)")
    a = ap.parse_args()
    table = rows(a.size, a.max_world)
    over = []
    if a.md:
        print("| problem | W | inputs GiB | outputs GiB | reference working GiB | total a rank GiB | at W | total at the largest W GiB |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for slug, per_w in table:
        if not per_w:
            print(f"{slug}: no world size up to {a.max_world} allowed", file=sys.stderr)
            continue
        w_max, worst = max(per_w, key=lambda x: x[1][3])
        ws = [w for w, _ in per_w]
        span = f"{ws[0]}-{ws[-1]}" if ws == list(range(ws[0], ws[-1] + 1)) else ",".join(map(str, ws))
        i, o, k, t = worst
        if t / GIB > H200_GIB:
            over.append((slug, w_max, t))
        if a.md:
            print(f"| {slug} | {span} | {fmt(i)} | {fmt(o)} | {fmt(k)} | {fmt(t)} | {w_max} | {fmt(per_w[-1][1][3])} |")
        else:
            print(f"{slug:45s} W {span:9s} in {fmt(i):>7s} out {fmt(o):>7s} work {fmt(k):>7s} total {fmt(t):>7s} (W={w_max})")
    for slug, w, t in over:
        print(f"OVER: {slug} needs {t / GIB:.1f} GiB a rank at W={w} (an H200 leaves ~{H200_GIB:.0f})", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
