"""fsdp_step_e2e on the CPU device in Python: one FSDP (ZeRO-3) training step of a two-layer
MLP with AdamW: all-gather the parameters, local gradients, reduce-scatter the gradients,
AdamW on the own shard.

The flat parameters (w1 (hid, din), b1, w2 (dout, hid), b2: P elements) are sharded: rank r
holds elements [r*part, (r+1)*part). Each step:

1. all-gather: every rank copies every peer's flat_param_shard out of the shared-memory
   heap into one local (P,) tensor, whose pieces are the four parameters;
2. the gradients of mean((relu(x w1^T + b1) w2^T + b2 - y)^2) on the rank's batch slice,
   in dt as autograd computes them, flattened into a symmetric buffer (pkb_init);
3. reduce-scatter: rank r reads part r of every rank's flat gradient, sums in fp32 and
   divides by W (the mean gradient of its shard), rounded once to dt;
4. AdamW on the shard in fp32, theta, m and v each rounded once into the outputs:
   p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
   p -= lr (m / bc1) / (sqrt(v / bc2) + eps), bias corrections bc = 1 - beta^step.

Three barriers: every shard is ready; every flat gradient is written; nobody reads my
gradient buffer any more (so the next call may overwrite it).
"""
import math

import torch
import torch.nn.functional as F


def pkb_init(ctx, inputs, outputs):
    # This rank's flat gradient (P,) in dt, where the peers read their parts of it.
    ctx.user = ctx.symm_alloc((ctx.args["P"],), outputs.theta.dtype)


def pkb_run(ctx, inputs, outputs):
    a = ctx.args
    din, hid, dout, part = a["din"], a["hid"], a["dout"], a["part"]
    shard, x, y = inputs.flat_param_shard, inputs.x, inputs.y
    grad = ctx.user

    # 1. All-gather the parameter shards (rank order) and view the four parameters.
    ctx.barrier()  # every rank's shard is ready
    flat = torch.cat([ctx.peer(shard, p) for p in range(ctx.world)])
    shapes = [(hid, din), (hid,), (dout, hid), (dout,)]
    w1, b1, w2, b2 = unflatten(flat, shapes)

    # 2. Local gradients, in dt (the forward and the backward of the MLP by hand).
    pre = F.linear(x, w1, b1)
    h = torch.relu(pre)
    out = F.linear(h, w2, b2)
    d_out = (out - y).mul_(2.0 / out.numel())  # d mean((out - y)^2) / d out
    d_pre = d_out.matmul(w2).mul_(h > 0)
    grads = [d_pre.t().matmul(x), d_pre.sum(0), d_out.t().matmul(h), d_out.sum(0)]
    for view, g in zip(unflatten(grad, shapes), grads):
        view.copy_(g)

    # 3. Reduce-scatter: my part of every rank's gradient, summed in fp32, averaged.
    ctx.barrier()  # every rank's flat gradient is written
    mine = slice(ctx.rank * part, (ctx.rank + 1) * part)
    g = torch.zeros(part, dtype=torch.float32)
    for p in range(ctx.world):
        g += ctx.peer(grad, p)[mine]
    g = g.div_(ctx.world).to(shard.dtype).float()  # the mean gradient, as dt
    ctx.barrier()  # nobody reads my gradient buffer any more

    # 4. AdamW on the shard in fp32, each result rounded once into pkb's buffers. The fp32
    # working copies are copies whatever dt is: where dt is fp32 already, .float() would
    # return the read-only input itself, and the in-place steps would change it.
    lr, beta1, beta2, eps, wd = a["lr"], a["beta1"], a["beta2"], a["eps"], a["weight_decay"]
    step = int(inputs.step)
    fp32 = lambda t: t.to(torch.float32, copy=True)
    p32 = fp32(shard).mul_(1 - lr * wd)
    m = fp32(inputs.exp_avg_shard).mul_(beta1).add_(g, alpha=1 - beta1)
    v = fp32(inputs.exp_avg_sq_shard).mul_(beta2).addcmul_(g, g, value=1 - beta2)
    bc1, bc2 = 1 - beta1 ** step, 1 - beta2 ** step
    denom = (v.sqrt() / math.sqrt(bc2)).add_(eps)
    p32.addcdiv_(m, denom, value=-lr / bc1)
    outputs.theta.copy_(p32)
    outputs.exp_avg.copy_(m)
    outputs.exp_avg_sq.copy_(v)


def unflatten(flat, shapes):
    """Views of consecutive pieces of `flat` with these shapes."""
    views, off = [], 0
    for shape in shapes:
        n = math.prod(shape)
        views.append(flat[off:off + n].view(shape))
        off += n
    return views
