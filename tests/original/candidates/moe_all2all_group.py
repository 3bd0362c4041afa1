# An original-format module for ep_moe_all2all: split sizes as Python lists and a trailing
# group argument (the original passes None), a data-dependent number of rows returned.
from typing import List, Optional

import torch
import torch.distributed as dist


def solution(local_tensor: torch.Tensor, input_split_sizes: List[int], output_split_sizes: List[int],
             group: Optional[dist.ProcessGroup] = None) -> torch.Tensor:
    group = group or dist.group.WORLD
    assert isinstance(input_split_sizes, list) and isinstance(output_split_sizes, list)
    out = local_tensor.new_empty((sum(output_split_sizes), local_tensor.size(1)))
    dist.all_to_all_single(out, local_tensor.contiguous(), output_split_sizes, input_split_sizes, group=group)
    return out
