"""The reference audit's table (bench/reference_audit.sh): one row per problem from what
`pkb dryrun --time --json` wrote ({"timing": {"median_us", ...}, "roofline": {"bound_us",
"fraction", "limiter"}, "memory": {"peak_bytes"}}), the exit code and seconds in status.tsv,
and the run's log for the problems that failed. A reference more than 10x off its bound
(fraction < 0.1) is flagged, with the reason when WHY below knows it.

usage: python3 bench/reference_audit_table.py OUT_DIR
"""
import json
import os
import sys

# Why a reference stays more than 10x off its roofline bound, where that is known from
# reading it (bench/results/large_presets.md and the specs' [roofline] comments).
WHY = {
    "cp_gated_deltanet_all2all": "sequential delta-rule recurrence, one 64-token chunk after another (launch-bound); the bound counts data movement only",
    "cp_kda_attention_cp_tp": "sequential delta-rule recurrence, one 64-token chunk after another (launch-bound), with per-key-dim decay tensors",
    "cp_magi_cso_attention": "the bound counts each range's own chunk of keys; the random windows average 2.5 chunks (the spec's deviation 1)",
    "cp_magi_tile_vae_decode": "one tile at a time (decode, blend, crop: hundreds of small kernels for 224 tiles at the large preset)",
    "sci_spherical_disco_conv": "the kernel's K x E shifted-row gathers, each a full pass over the feature map; the bound counts reading x and writing y once",
    "ep_fused_moe_fwd": "one local expert at a time (256 at W = 1: three small GEMMs each)",
    "ep_fused_moe_fwd_lora": "one local expert at a time (256 at W = 1: three small GEMMs and their LoRA terms each)",
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
    "misc_gsplat_projection_all2all": "per-Gaussian projection in fp32 plus host round trips for the splits",
    "ep_moe_token_preprocess": "tiny tensors: launch- and host-sync-bound",
    "ep_load_balancing_loss": "tiny tensors: launch-bound",
    "dp_grad_acc_loss_allreduce": "scalars: launch-bound",
    "dp_sam3_iou_suppression": "tiny tensors: launch- and host-sync-bound",
    "ep_moe_lora_grad_allreduce": "tiny tensors: launch-bound",
}


def gib(b):
    return f"{b / (1 << 30):.1f}" if b else ""


def ms(us):
    return f"{us / 1000:.3f}" if us else ""


def last_line(path):
    try:
        with open(path, errors="replace") as f:
            lines = [l.strip() for l in f if l.strip()]
        return lines[-1][:160].replace("|", "/") if lines else ""
    except OSError:
        return ""


def main():
    out = sys.argv[1]
    status = []
    with open(os.path.join(out, "status.tsv")) as f:
        for line in f:
            p, rc, secs = line.rstrip("\n").split("\t")
            status.append((p, rc, int(secs)))
    print("| problem | median ms | bound ms | fraction | limiter | peak GiB | wall s | note |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    counts = {"ok": 0, "off": 0, "failed": 0, "not run": 0}
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
            counts["failed"] += 1
            why = "timed out" if rc in ("124", "137") else f"exit {rc}"
            print(f"| {p} | | | | | | {secs} | {why}: {last_line(os.path.join(out, p + '.log'))} |")
            continue
        t, roof, mem = data["timing"], data.get("roofline") or {}, data.get("memory") or {}
        frac = roof.get("fraction")
        note = ""
        if frac is not None and frac < 0.1:
            counts["off"] += 1
            note = f"{1 / frac:.0f}x off the bound" + (f": {WHY[p]}" if p in WHY else "")
        else:
            counts["ok"] += 1
        fr = f"{frac:.3f}" if frac is not None else ""
        if not roof:
            note = "no roofline (no hardware profile for this device)"
        its = (data.get("counts") or {}).get("iters")
        calls = f" ({its} calls)" if its else ""
        print(f"| {p} | {ms(t.get('median_us'))}{calls} | {ms(roof.get('bound_us'))} | {fr} | {roof.get('limiter', '')} | "
              f"{gib(mem.get('peak_bytes'))} | {secs} | {note} |")
    print()
    print(f"{counts['ok']} within 10x of the bound, {counts['off']} further off, {counts['failed']} failed, "
          f"{counts['not run']} not run.")


if __name__ == "__main__":
    main()
