# BAD original-format module for coll_allreduce: returns two tensors where the original
# returns one. Expected verdict: wrong, saying so.
import torch.distributed as dist


def solution(tensor):
    out = tensor.clone()
    dist.all_reduce(out)
    return out, out
