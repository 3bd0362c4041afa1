# BAD original-format module for coll_allreduce: a group of rank 0 alone, which inside pkb's
# sandbox cannot be made (its communicator would need new sockets). Expected verdict: wrong,
# saying so.
import torch.distributed as dist


def solution(tensor):
    dist.new_group(ranks=[0])
    out = tensor.clone()
    dist.all_reduce(out)
    return out
