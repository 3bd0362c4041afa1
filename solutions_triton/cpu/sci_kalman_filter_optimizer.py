"""sci_kalman_filter_optimizer on the CPU device in Python: one step of DeePMD-kit's
layer-wise Kalman filter, with a scalar all-reduce and an all-gather by pushing.

Rank r holds NB blocks of BS weights (NB, BS, 1), their gradients H, their covariances P
(NB, BS, BS), a prediction error and the forgetting factor lambda, all fp64. The step:

    a = 1 / sum over ranks and blocks of (lambda + H_i^T P_i H_i)    (an all-reduce)
    K_i = P_i H_i;  w_i += a * error * K_i;  P_i = (P_i - a K_i K_i^T) / lambda

and every rank returns every rank's new weights (rank order), its own new P and
lambda_next = nue * lambda + 1 - nue.

The all-reduce of one scalar: each rank writes its partial sum into a one-element
symmetric buffer (pkb_init), and after a barrier reads every rank's and adds them up
(every rank in the same order, so all get the same a). The all-gather by pushing: each
rank writes its new weights into its slot of every rank's weights_all; a last barrier
says all pushes have landed. Writing into a peer's output is safe only after the first
barrier: pkb fills each rank's outputs before that rank's call starts.
"""
import torch


def pkb_init(ctx, inputs, outputs):
    # This rank's partial sum of lambda + H^T P H, where the peers read it.
    ctx.user = ctx.symm_alloc((1,), torch.float64)


def pkb_run(ctx, inputs, outputs):
    h, p, w, lam, err = inputs.H, inputs.P, inputs.weights, inputs.kalman_lambda, inputs.error
    nb = h.shape[0]
    partial = ctx.user

    k = torch.bmm(p, h)                            # K_i = P_i H_i, (NB, BS, 1)
    partial.copy_((lam * nb + (h * k).sum()).reshape(1))
    ctx.barrier()  # every rank's partial sum is written (and every rank's call has started)
    total = torch.zeros((), dtype=torch.float64)
    for q in range(ctx.world):
        total += ctx.peer(partial, q)[0]
    a = total.reciprocal()

    # My new weights, pushed into my slot of every rank's weights_all.
    w_new = w + a * err * k
    mine = slice(ctx.rank * nb, (ctx.rank + 1) * nb)
    for q in range(ctx.world):
        ctx.peer(outputs.weights_all, q)[mine].copy_(w_new)
    # P_i - a K_i K_i^T, then / lambda, straight into pkb's buffer.
    p_new = outputs.P_new
    torch.bmm(k, k.transpose(1, 2), out=p_new)
    p_new.mul_(-a).add_(p).div_(lam)
    nue = ctx.args["kalman_nue"]
    outputs.lambda_next.copy_(lam * nue + (1.0 - nue))
    ctx.barrier()  # every push has landed; nobody reads my partial sum any more
