# An original-format module for coll_allreduce over torch's symmetric memory, as the
# original's CUDA candidates use it (here on the CPU device, whose symmetric heap is
# shared memory): a buffer from symm_mem.empty and its rendezvous handle, cached at module
# level; every rank reads every peer's buffer between the handle's barriers.
import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

_resources = {}


def _get(tensor):
    key = (tuple(tensor.shape), tensor.dtype)
    if key not in _resources:
        buf = symm_mem.empty(tensor.shape, dtype=tensor.dtype, device=tensor.device)
        hdl = symm_mem.rendezvous(buf, dist.group.WORLD)
        assert hdl.multicast_ptr == 0 and len(hdl.buffer_ptrs) == dist.get_world_size()
        assert hdl.buffer_ptrs[hdl.rank] == buf.data_ptr()
        _resources[key] = (buf, hdl, torch.empty(tensor.shape, dtype=torch.float32))
    return _resources[key]


@torch.no_grad()
def solution(tensor):
    buf, hdl, acc = _get(tensor)
    buf.copy_(tensor)
    hdl.barrier(channel=0)
    acc.zero_()
    for r in range(hdl.world_size):
        acc += hdl.get_buffer(r, tensor.shape, tensor.dtype)
    hdl.barrier(channel=1)  # every peer has read this rank's buffer before the next call rewrites it
    return acc.to(tensor.dtype)
