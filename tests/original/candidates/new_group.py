# An original-format module for coll_allreduce that makes its own group of every rank with
# dist.new_group (inside pkb's sandbox: the default group, already connected).
import torch.distributed as dist

_group = None


def solution(tensor):
    global _group
    if _group is None:
        _group = dist.new_group(ranks=list(range(dist.get_world_size())))
    out = tensor.clone()
    dist.all_reduce(out, group=_group)
    return out
