"""pp_ring_attention_pp on the CPU device in Python: two pipeline stages, each an attention
block with causal attention over its context-parallel group.

pp = min(2, W) stages of cp = W/pp ranks: ranks [p*cp, (p+1)*cp) form stage p (a CP
group), and rank c of stage 1 takes its input from rank c of stage 0 (its PP peer). A stage
computes qkv = x w_qkv^T (dt), causal attention over the whole sequence of its CP group in
fp32 (rounded to dt), and out = ctx w_o^T (dt). Each CP rank holds a zig-zag shard of the
T-token sequence: chunks c and 2cp-1-c of 2cp chunks of S/2.

Communication through the shared-memory heap, the stages one after the other:

- the pipeline hand-off: a stage-1 rank reads its input straight out of its PP peer's
  output buffer (`ctx.peer(outputs.out, rank - cp)`), once stage 0 has written it;
- the context parallelism: every rank publishes its K and V in a symmetric buffer
  (`ctx.symm_alloc` in pkb_init) and gathers its CP peers' (an all-gather in place of the
  reference's ring). The causal mask then goes by global token position, so the zig-zag
  order needs no special cases: query i sees key j when pos(j) <= pos(i).

Two barriers per stage: after the first every rank of the stage has published K and V;
after the second the stage's outputs are written and nobody reads its K and V any more.
At W = 2 (cp = 1) each stage's attention is plain causal attention on the rank's own
sequence, and the only exchange is the hand-off.
"""
import torch
import torch.nn.functional as F


def pkb_init(ctx, inputs, outputs):
    a = ctx.args
    # This rank's K and V, (2, B, S, NH, D) in dt, where its CP peers can read them.
    ctx.user = ctx.symm_alloc((2, a["B"], a["S"], a["NH"], a["D"]), outputs.out.dtype)


def positions(rank_in_group, cp, s):
    """Global token positions of the S rows a CP rank holds (zig-zag chunks c, 2cp-1-c)."""
    h = s // 2
    first = torch.arange(rank_in_group * h, (rank_in_group + 1) * h)
    second = torch.arange((2 * cp - 1 - rank_in_group) * h, (2 * cp - rank_in_group) * h)
    return torch.cat([first, second])


def pkb_run(ctx, inputs, outputs):
    a = ctx.args
    b, s, nh, d, hd, pp, cp = a["B"], a["S"], a["NH"], a["D"], a["Hd"], a["pp"], a["cp"]
    stage, c = ctx.rank // cp, ctx.rank % cp
    w_qkv, w_o, out = inputs.w_qkv, inputs.w_o, outputs.out
    kv = ctx.user
    group = range(stage * cp, (stage + 1) * cp)  # my stage's ranks, in CP order

    for p in range(pp):  # stage p runs while the other stage waits at the barriers
        mine = p == stage
        if mine:
            # Stage 0 starts from hidden_states; stage 1 from its PP peer's output, which
            # stage 0 wrote before the last barrier.
            x = inputs.hidden_states if stage == 0 else ctx.peer(out, ctx.rank - cp)
            qkv = torch.matmul(x, w_qkv.reshape(3 * hd, hd).t()).view(b, s, 3, nh, d)  # dt
            kv.copy_(qkv[:, :, 1:].permute(2, 0, 1, 3, 4))  # publish K and V
        ctx.barrier()  # stage p's K and V are published
        if mine:
            # All-gather K and V over the CP group: (B, NH, cp*S, D) fp32, in group order.
            peers = [ctx.peer(kv, g) for g in group]
            k = torch.cat([t[0] for t in peers], dim=1).float().transpose(1, 2)
            v = torch.cat([t[1] for t in peers], dim=1).float().transpose(1, 2)
            q = qkv[:, :, 0].float().transpose(1, 2)  # (B, NH, S, D)
            # Causal by global position: my rows' positions against every key's.
            q_pos = positions(c, cp, s)
            k_pos = torch.cat([positions(j, cp, s) for j in range(cp)])
            allowed = k_pos[None, :] <= q_pos[:, None]  # (S, cp*S) bool
            att = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=d ** -0.5)
            ctx_dt = att.transpose(1, 2).reshape(b, s, hd).to(out.dtype)  # rounded to dt
            out.copy_(torch.matmul(ctx_dt, w_o.t()))
        ctx.barrier()  # stage p's outputs are written; nobody reads its K and V any more
