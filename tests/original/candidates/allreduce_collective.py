# An original-format module (solution(*inputs) over torch.distributed) for coll_allreduce:
# NCCL's (here gloo's) all-reduce on a copy, with a module-level cache of the buffer.
import torch
import torch.distributed as dist

_cache = {}


def solution(tensor):
    assert dist.is_initialized()
    out = _cache.get(tensor.shape)
    if out is None:
        out = _cache[tensor.shape] = torch.empty_like(tensor)
    out.copy_(tensor)
    dist.all_reduce(out, group=dist.group.WORLD)
    return out
