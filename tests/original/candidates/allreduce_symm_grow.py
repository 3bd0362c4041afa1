# An original-format module for coll_allreduce whose symmetric memory outgrows the heap pkb's
# harness leaves (256 MiB by default): a 320 MiB staging buffer, as ep_moe_all2all's
# original candidate allocates 512 MiB. pkb maps a further heap on every rank, over its own
# channel, inside the sandbox.
import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

_res = {}


@torch.no_grad()
def solution(tensor):
    if "buf" not in _res:
        big = symm_mem.empty(320 << 20, dtype=torch.uint8, device=tensor.device)
        hdl = symm_mem.rendezvous(big, dist.group.WORLD)
        _res.update(buf=big, hdl=hdl)
    big, hdl = _res["buf"], _res["hdl"]
    n = tensor.numel() * tensor.element_size()
    big[-n:].copy_(tensor.reshape(-1).view(torch.uint8))  # the payload at the far end of the buffer
    hdl.barrier(channel=0)
    acc = torch.zeros(tensor.shape, dtype=torch.float32)
    for r in range(hdl.world_size):
        peer = hdl.get_buffer(r, [320 << 20], torch.uint8)
        acc += peer[-n:].view(tensor.dtype).reshape(tensor.shape)
    hdl.barrier(channel=1)
    return acc.to(tensor.dtype)
