# An original-format module for sp_ulysses_allgather (the original's 34, its first release's
# 35): all_gather_into_tensor with a trailing group argument (the original passes None).
from typing import Optional

import torch
import torch.distributed as dist


def solution(x: torch.Tensor, group: Optional[dist.ProcessGroup] = None) -> torch.Tensor:
    group = group or dist.group.WORLD
    world = dist.get_world_size(group)
    out = torch.empty((world * x.size(0),) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(out, x.contiguous(), group=group)
    return out
