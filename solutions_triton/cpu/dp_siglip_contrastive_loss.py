"""dp_siglip_contrastive_loss on the CPU device in Python: SigLIP's sigmoid loss over a
data-parallel batch, with an all-gather of the text embeddings.

Rank r holds Bl image and Bl text embeddings. Its loss pairs its images with every rank's
texts: logits = scale * I_r T^T + bias, (Bl, W*Bl); the Bl pairs (i, i) of its own block are
positives (label +1), every other pair a negative (-1), and the loss is
sum -log sigmoid(label * logits) / Bl, in fp32 and rounded once.

The reference passes the text blocks around a ring by neighbour exchange; here every rank
reads all of them at once from the peers' inputs through the shared-memory heap (an
all-gather by pulling), between two barriers: every input is ready; every rank has its
copy, so nobody reads my text_features any more. Then one GEMM and one reduction.
As -log sigmoid(x) = -log sigmoid(-x) - x, the loss is the all-negative sum less the
positives' logits: no labels matrix.
"""
import torch
import torch.nn.functional as F


def pkb_run(ctx, inputs, outputs):
    image, text = inputs.image_features, inputs.text_features
    bl = image.shape[0]
    scale, bias = ctx.args["logit_scale"], ctx.args["logit_bias"]

    ctx.barrier()  # every rank's text_features are ready
    # Every rank's texts in rank order, (W*Bl, D), converted to fp32 as they are copied.
    texts = torch.cat([ctx.peer(text, p).float() for p in range(ctx.world)])
    ctx.barrier()  # all copied: the peers may go on

    logits = torch.matmul(image.float(), texts.t()).mul_(scale).add_(bias)  # (Bl, W*Bl) fp32
    loss = -F.logsigmoid(-logits).sum()  # every pair as a negative
    # My own block's diagonal holds the positives: -log sigmoid(x) = -log sigmoid(-x) - x.
    own = logits[:, ctx.rank * bl:(ctx.rank + 1) * bl]
    loss -= own.diagonal().sum()
    outputs.loss.copy_(loss / bl)  # rounded once to dt
