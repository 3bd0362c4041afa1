"""The reference audit's table (bench/reference_audit.sh): one row per problem from what
`pkb dryrun --time --json` wrote ({"timing": {"median_us", ...}, "roofline": {"bound_us",
"fraction", "limiter"}, "memory": {"peak_bytes"}}), the exit code and seconds in status.tsv,
and the run's log for the problems that failed. A reference more than 10x off its bound
(fraction < 0.1) is flagged, with the reason when WHY below knows it. A row without a bound
says why: the spec (problems/<slug>.toml) declares no [roofline], or pkb had no hardware
profile for the device. A problem whose world-size rules exclude the audit's W (pkb's
"runs with 2 to 64 ranks, not 1") counts as not run, not as failed.

usage: python3 bench/reference_audit_table.py OUT_DIR
"""
import json
import os
import re
import sys

PROBLEMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "problems")

# Why a reference stays more than 10x off its roofline bound, where that is known from
# reading it (bench/results/large_presets.md and the specs' [roofline] comments).
WHY = {
    "cp_gated_deltanet_all2all": "sequential delta-rule recurrence, one 64-token chunk after another (launch-bound); the bound counts data movement only",
    "cp_kda_attention_cp_tp": "sequential delta-rule recurrence, one 64-token chunk after another (launch-bound), with per-key-dim decay tensors",
    "cp_magi_cso_attention": "the bound counts each range's own chunk of keys; the random windows average 2.5 chunks (the spec's deviation 1)",
    "cp_magi_tile_vae_decode": "rewritten (tiles of one shape decoded, blended and placed in batches, ~120 launches a call where there were ~30 a tile): 50.9 -> 10.6 ms; the rest is ATen's trilinear upsampling, 4.3 ms for the 224 tiles' 1.06 GB where a copy of them takes 0.51 (bench/magi_decode_probe.py: a library limit), and the fp32 blend's widening (1.5 ms) and rounding crop (0.8 ms)",
    "sci_spherical_disco_conv": "rewritten (one weighted gather-sum, ATen's embedding_bag, for the K x E shifted-row passes): 34.9 -> 18.5 ms; each output still reads its K x E taps from memory (~13 GB of gathered rows at large) where the bound reads x once: no ATen op keeps a row's taps in cache (a library limit)",
    "ep_fused_moe_fwd": "one local expert at a time (256 at W = 1: three small GEMMs each, ~2300 launches a call): host-bound, its time follows the host's; torch's grouped GEMM takes no bias, and adding it after rounds twice (0.38-0.45 of the tolerance against 0.27-0.42, measured on the CPU device)",
    "ep_fused_moe_fwd_lora": "one local expert at a time (256 at W = 1: three small GEMMs and their LoRA terms each): host-bound, its time follows the host's; torch's grouped GEMM takes no bias, and adding it after rounds twice (0.38-0.45 of the tolerance against 0.27-0.42, measured on the CPU device)",
    "tp_muon_newton_schulz": "fp32 GEMMs by the spec (the original's); the bound uses the bf16 rate",
    "dp_dinov2_knn": "fp32 similarity GEMM and a stable full sort of every row (exact ties by index, the spec's rule); the bound counts the GEMM only",
    "gnn_feature_fetch_projection": "the bound leaves out the data-dependent gather and exchange",
    "gnn_feature_exchange_all2all": "the bound leaves out the data-dependent gather and exchange",
    "gnn_feature_exchange_all2all_bwd": "the bound leaves out the data-dependent scatter and exchange",
    "gnn_negative_scoring_rank": "the bound leaves out the data-dependent gathers",
    "gnn_neighbor_sampling": "sorting and sampling of data-dependent sizes (host round trips per hop); the bound counts outputs only",
    "gnn_sparse_embedding_all2all": "the bound leaves out the data-dependent gather and exchange",
    "rec_torchrec_kjt_all2all": "small data-dependent exchanges (host round trips for the splits)",
    "rec_sharded_embedding_lookup": "the bound leaves out the data-dependent gather",
    "misc_sample_sort": "sorts and host round trips for the bucket sizes",
    "misc_gsplat_projection_all2all": "rewritten (the per-Gaussian 3x3 and 2x3 products as broadcast sums, not batched matmuls of millions of tiny matrices): 23.5 -> 7.5 ms; host-bound since: ~100 elementwise ops over (C, n) and the host round trips for the splits (nonzero, counts); the bound leaves out the data-dependent output",
    "ep_moe_token_preprocess": "tiny tensors: launch- and host-sync-bound",
    "ep_load_balancing_loss": "not tiny at the large preset (196608 x 128 logits): ATen's top-k over the 128-wide rows takes 1.20 of its 1.78 ms (a full sort of each row 1.26; bench/load_balancing_probe.py): a library limit; rewritten (softmax read from bf16, unsorted top-k, counts as a column sum of the choices' mask): 1.82 -> 1.78 ms",
    "dp_grad_acc_loss_allreduce": "scalars: launch-bound",
    "dp_sam3_iou_suppression": "tiny tensors: launch- and host-sync-bound",
    "ep_moe_lora_grad_allreduce": "tiny tensors: launch-bound",
    "cp_conv2d_halo_exchange": "the 3x3 conv runs in fp32 with TF32 off (~28 TFLOP/s; fp32 peak 67) where the bound takes the bf16 tensor-core rate (989)",
    "cp_hyena_conv1d_halo": "rewritten (the chunks written once behind their halos, widened as copied; the output rounded as copied back): 3.083 -> 2.473 ms; left: the fp32 depthwise conv the spec asks for (ATen's kernel reads and writes fp32, twice the bytes of bf16) and the halo exchange's copies",
    "cp_hyena_fftconv_all2all": "the bound counts no FFT work: cuFFT's rfft of u and of h and the irfft of their product over 2Ls in fp32 (complex64 spectra, each twice the size of the fp32 rows) are the spec's method; rewritten (one exchange for the three inputs, v and x1 widened as read, the spectra multiplied and the tail done in place): 3.657 -> 3.541 ms; then 3.475 with the zig-zag's index tensors made once in setup (their copy from the host in every call had held the host until the device was done)",
    "cp_rope_allgather": "fp32 math by the spec (half an ulp), ATen has no fused rotary: per half one product pass and one addcmul (the other product, the sum and the rounding into bf16), and the gather's copy; measured per pass, bench/rope_allgather_probe.py: the rotation of q 2.90 ms against 0.27 for a copy of q (rewritten: 8.68 -> 6.28 ms)",
    "dp_dinov2_sinkhorn_knopp": "~23 unfused passes over the 2 GiB fp32 matrix (exp, sums, 4 divisions per iteration, scalings): ~84 GB against the bound's 4.3 GB",
    "dp_int8_quant_grad_allreduce": "rewritten (no fp32 copy of the gradient, amax an inf-norm from bf16, fp32 throughout, no clamp, the mean rounded into bf16 in one op): the blocks' amax (0.60 ms), the fp32 quotient (1.17), its rounding in place (0.51) and the product by the scales (1.04), each a pass: ATen has no fused round-to-scale, and its quantizers round x * (1/s), other codes than the spec's division (bench/int8_quant_probe.py); 7.0 -> 5.3 -> 3.5 ms",
    "ep_moe_combine_unpermute": "rewritten (each token's rows weighted and summed in one embedding_bag, fp32 products and sum rounded once; the regroup by source a gather, not a scatter): 3.79 -> 2.01 -> 1.67 ms; left (bench/combine_probe.py, 4096 tokens x top-8, 7168 wide): ATen's embedding_bag 0.85 ms (6x one read of the rows: a library limit), the exchange's copy at W = 1 0.23 and the regroup's gather, which the bound does not count, and 0.19 of index sorts",
    "ep_moe_dispatch_permute": "the reference gathers the top_k*M routed rows twice (permute, regroup); the bound counts writing them, and without that the reference read 38x off",
    "fsdp_clip_grad_norm": "five passes per gradient over fp32 copies (cast and norm; cast, scale, rounding for the clip): ~6 GB against the bound's 0.8 GB",
    "fsdp_clip_grad_norm_ep": "five passes per gradient over fp32 copies (cast and norm; cast, scale, rounding for the clip): ~4 GB against the bound's 0.54 GB",
    "fsdp_fp8_allgather_params": "the amax an inf-norm read from bf16, the e4m3 round trip in three passes (the quotient cast to fp8 as written, the codes widened, the product rounded as written: ATen promotes no fp8), the gather's copy",
    "fsdp_fp8_reducescatter_grads": "the amax an inf-norm read from bf16, the e4m3 round trip in three passes (as fsdp_fp8_allgather_params), the reduce-scatter's copy and the /W",
    "sci_distributed_irfft2": "rebuilds the full spectrum (zero pad, conj flip, gather, row flip), two full C2C inverse FFTs, ~10 complex copies between: ~100 GB vs 4.3",
    "sci_distributed_rfft2": "two full C2C FFTs (the X one truncated after: twice the outputs) and four complex copies (transpose, exchange, regroup, truncation): ~50 GB vs 4.3",
    "tp_fp8_block_quant_allgather": "rewritten (amax as an inf-norm from bf16, the quotient cast to fp8 in its kernel): 0.45 ms, 0.71 before; the rest is ATen's (bench/fp8_quant_probe.py): the blocks' amax over 128-wide rows 0.149 ms (3x a read; every other ATen form slower), the broadcast divide of bf16 by fp32 scales into fp8 0.301 ms (ATen's dynamically cast path: as slow into fp32, 0.174 in one dtype), the gathers' copies 0.043 ms: a library limit",
    "tp_reducescatter_rmsnorm": "the divide by W, then RMSNorm as the original's unfused fp32 ops (cast, square, mean, rsqrt, two products, cast): ~9 passes over the 32 MB chunk or its fp32 copy where the bound reads x and writes y once",
    "tp_rmsnorm_allreduce": "rewritten (three passes over the rows, no fp32 copy): 0.143 ms, 0.244 before, 10.2x; ATen's fused RMSNorm cannot take a sum of squares all-reduced between its steps, so the weight's product stays a pass of its own (a library limit)",
    "tp_vocab_parallel_cross_entropy": "at W = 1 ATen's fused cross-entropy on the bf16 logits (0.57 ms); at W > 1 the max from the bf16 logits, then an fp32 shifted copy, exp in place and the sum: three passes over fp32 where the bound reads the bf16 logits once; ATen has no one-pass fp32 log-sum-exp of bf16 rows (logsumexp is composite; log_softmax from bf16 rounds its output): bench/vocab_ce_probe.py",
    "tp_vocab_parallel_logprob_topk": "the exchange's copy and a top-11 of every 32768-wide bf16 row: torch's top-k costs ten reads of the rows (bench/topk_probe.py: 2.05 ms against a row max's 0.19 ms at these sizes), and no libtorch call does it in one pass",
    "tp_vocab_parallel_logprob_topk_chunked": "as tp_vocab_parallel_logprob_topk (the exchange's copy, the top-11 of every bf16 row: ten reads' worth) in 4 chunks, each with a host sync and its own exchanges",
    "tp_vocab_parallel_logprob_topk_chunked_bwd": "the forward's exchange and top-11 per bf16 row (ten reads' worth), then the dense fp32 gradient (zeros plus scatter, into the return exchange's order) and the return exchange",
}


def gib(b):
    return f"{b / (1 << 30):.1f}" if b else ""


def ms(us):
    return f"{us / 1000:.3f}" if us else ""


def last_line(path):
    try:
        with open(path, errors="replace") as f:
            lines = [l.strip() for l in f if l.strip()]
        return lines[-1] if lines else ""
    except OSError:
        return ""


def cell(text):
    return text[:160].replace("|", "/")


def spec_has_roofline(slug):
    """True or False by whether problems/<slug>.toml has a [roofline] section; None without the spec."""
    try:
        with open(os.path.join(PROBLEMS, slug + ".toml")) as f:
            return any(re.match(r"\s*\[roofline\]\s*(#.*)?$", l) for l in f)
    except OSError:
        return None


def world_excluded(line):
    """The note for pkb's refusal of this world size (its spec's ranks or constraints), else None."""
    m = re.search(r"runs with (\d+) to (\d+) ranks, not (\d+)", line)
    if m:
        lo, hi, w = (int(g) for g in m.groups())
        return f"needs W >= {lo}: not run at W={w}" if w < lo else f"needs W <= {hi}: not run at W={w}"
    m = re.search(r" needs (.+), which fails at W=(\d+)", line)
    if m:
        return f"needs {m.group(1)}: not run at W={m.group(2)}"
    return None


def main():
    out = sys.argv[1]
    status = []
    with open(os.path.join(out, "status.tsv")) as f:
        for line in f:
            p, rc, secs = line.rstrip("\n").split("\t")
            status.append((p, rc, int(secs)))
    print("| problem | median ms | bound ms | fraction | limiter | peak GiB | wall s | note |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    counts = {"ok": 0, "off": 0, "no bound": 0, "failed": 0, "not run": 0}
    for p, rc, secs in status:
        if rc == "budget":
            counts["not run"] += 1
            print(f"| {p} | | | | | | | not run: the audit's time budget was spent |")
            continue
        path = os.path.join(out, p + ".json")
        data = None
        if os.path.exists(path):
            with open(path) as f:
                try:
                    data = json.load(f)
                except json.JSONDecodeError:
                    data = None
        if rc != "0" or not data or "timing" not in data:
            log = last_line(os.path.join(out, p + ".log"))
            excluded = world_excluded(log) if rc != "0" else None
            if excluded:
                counts["not run"] += 1
                print(f"| {p} | | | | | | {secs} | {excluded} |")
                continue
            counts["failed"] += 1
            why = "timed out" if rc in ("124", "137") else f"exit {rc}"
            print(f"| {p} | | | | | | {secs} | {why}: {cell(log)} |")
            continue
        t, roof, mem = data["timing"], data.get("roofline") or {}, data.get("memory") or {}
        frac = roof.get("fraction")
        if not roof or frac is None:
            counts["no bound"] += 1
            declared = spec_has_roofline(p)
            if declared is False:
                note = "the spec declares no roofline"
            elif declared:
                note = "no roofline (no hardware profile for this device)"
            else:
                note = "no roofline (and no spec found to tell why)"
        elif frac < 0.1:
            counts["off"] += 1
            note = f"{1 / frac:.0f}x off the bound" + (f": {WHY[p]}" if p in WHY else "")
        else:
            counts["ok"] += 1
            note = ""
        # Measured where dryrun reports it: a call its host held for most of its time is paced
        # by the host (its launches, or its waits where it synchronises), not by the GPU alone.
        enq = (data.get("host") or {}).get("enqueue_median_us")
        if enq and t.get("median_us") and enq >= 0.8 * t["median_us"]:
            note += ("; " if note else "") + f"its host held each call {ms(enq)} ms (launches, and waits where it synchronises)"
        fr = f"{frac:.3f}" if frac is not None else ""
        its = (data.get("counts") or {}).get("iters")
        calls = f" ({its} calls)" if its else ""
        print(f"| {p} | {ms(t.get('median_us'))}{calls} | {ms(roof.get('bound_us'))} | {fr} | {roof.get('limiter', '')} | "
              f"{gib(mem.get('peak_bytes'))} | {secs} | {note} |")
    print()
    print(f"{counts['ok']} within 10x of the bound, {counts['off']} further off, {counts['no bound']} with no bound, "
          f"{counts['failed']} failed, {counts['not run']} not run.")


if __name__ == "__main__":
    main()
