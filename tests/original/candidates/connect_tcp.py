# BAD original-format module for coll_allreduce: opens a TCP socket in solution (to send
# its inputs somewhere). Expected verdict: integrity_violation, as for any candidate.
import socket

import torch.distributed as dist


def solution(tensor):
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        pass
    out = tensor.clone()
    dist.all_reduce(out)
    return out
