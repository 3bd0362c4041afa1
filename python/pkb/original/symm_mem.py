"""pkb's torch.distributed._symmetric_memory, for candidates in the original's format.

In a candidate rank this module is torch.distributed._symmetric_memory (pkb.original puts
it there). It answers the calls such modules make as torch's own does, with memory from
pkb's symmetric heap, which every rank has mapped since before the sandbox (CUDA: cuMem
allocations whose descriptors went over pkb's bootstrap channel; CPU device: memfd shared
memory), so nothing here opens a socket or a CUDA IPC channel:

    empty(*size, dtype=None, device=None)   a tensor in the heap (not collective)
    rendezvous(tensor, group)               collective: a handle with every rank's pointers
    handle.buffer_ptrs, buffer_ptrs_dev, signal_pad_ptrs, signal_pad_ptrs_dev, buffer_size,
    signal_pad_size, rank, world_size, device, offset, multicast_ptr (0: multicast is off),
    has_multicast_support(), barrier(channel=0, timeout_ms=0), put_signal(dst_rank, ...),
    wait_signal(src_rank, ...), get_buffer(rank, sizes, dtype, storage_offset=0),
    get_signal_pad(rank, sizes=None, dtype=torch.uint32, storage_offset=0)

Every allocation has its own signal pad of torch's default size, zeroed when it is made;
barrier and the signals follow torch's protocol on it (a slot goes 0 -> 1 to signal and
1 -> 0 when consumed; slot channel * world_size + src). Blocks are cut first-fit from the
part of the heap pkb's harness leaves (pkb eval --heap-size sets it), then from further
heaps of at least 256 MiB that every rank makes alike when a request fits nowhere (their
memory exchanged over pkb's channel, as the first's), at the same place on every rank when
every rank allocates and frees in the same order, which rendezvous checks (a tensor's block
returns when its storage dies). Handles span the default group (every
rank), the only one a module can hold inside the sandbox. multicast_ptr is 0: pkb never
maps NVLink multicast for a candidate, as torch reports where multicast is absent.
"""

import torch

import _pkb

__all__ = ["empty", "rendezvous", "enable_symm_mem_for_group", "is_symm_mem_enabled_for_group",
           "get_signal_pad_size", "set_signal_pad_size", "is_nvshmem_available", "get_backend", "set_backend"]

_info = None
_blocks = {}   # storage data_ptr -> _Block (the latest allocation at that address)
_seq = [0]     # rendezvous calls so far on this rank


def _setup(info):
    global _info
    _info = dict(info)
    _info.update(_pkb.symm_info())


class _Block:
    """One allocation: where it is (token, the same on every rank), its size, every rank's
    address of it. Its handles are cached weakly: a handle keeps its allocation alive (as
    torch's does), and both go once the module drops them."""
    __slots__ = ("token", "nbytes", "ptr", "peers", "handles")

    def __init__(self, token, nbytes, ptr, peers):
        import weakref
        self.token, self.nbytes, self.ptr, self.peers = token, nbytes, ptr, peers
        self.handles = weakref.WeakValueDictionary()


def _stream_ptr(device):
    if device.type == "cuda":
        return torch.cuda.current_stream(device).cuda_stream
    return 0


def _device(device):
    if device is None:
        device = torch.get_default_device()
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def empty(*size, dtype=None, device=None):
    """Like torch.empty: a tensor in pkb's symmetric heap, for rendezvous()."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    dtype = dtype or torch.get_default_dtype()
    device = _device(device)
    mine = _info["device"]
    if (device.type == "cuda") != (mine >= 0) or (mine >= 0 and device.index != mine):
        here = f"cuda:{mine}" if mine >= 0 else "cpu"
        raise RuntimeError(f"symm_mem.empty(device={device}): this rank's symmetric heap is on {here}")
    strides, acc = [], 1
    for s in reversed(size):
        strides.append(acc)
        acc *= s
    strides.reverse()
    nbytes = acc * torch.empty((), dtype=dtype).element_size()
    from pkb import _CODE
    tensor, token, peers = _pkb.symm_empty(nbytes, size, tuple(strides), _CODE[dtype], _stream_ptr(device))
    ptr = tensor.untyped_storage().data_ptr()
    _blocks[ptr] = _Block(token, nbytes, ptr, peers)  # a freed block's entry is replaced when its address comes back
    return tensor


def _group_name(group):
    import torch.distributed as dist
    if group is None:
        return dist.group.WORLD.group_name
    if isinstance(group, str):
        return group
    return group.group_name


def rendezvous(tensor, group):
    """Collective over every rank: the handle of the allocation `tensor` lives in."""
    import torch.distributed as dist
    from torch._C._distributed_c10d import ProcessGroup
    if not isinstance(group, (str, ProcessGroup)):
        raise TypeError(f"rendezvous: unsupported group type: {type(group)}")
    name = _group_name(group)
    world = dist.group.WORLD
    if name != world.group_name:
        raise RuntimeError(f"rendezvous(group={name!r}): pkb's symmetric memory spans the default group (every rank); "
                           "pass dist.group.WORLD")
    block = _blocks.get(tensor.untyped_storage().data_ptr())
    if block is None:
        raise RuntimeError("rendezvous: the tensor was not allocated by symm_mem.empty(): pkb's symmetric memory "
                           "can only rendezvous its own allocations")
    handle = block.handles.get(name)
    if handle is None:
        handle = _Handle(block, tensor, _exchange(block))
        block.handles[name] = handle
    return handle


def _exchange(block):
    """Every rank's (offset, size) of this rendezvous, through the store pkb's channel
    carries: they must agree, or the ranks allocated asymmetrically."""
    import torch.distributed as dist
    store = dist.distributed_c10d._get_default_store()
    seq = _seq[0]
    _seq[0] += 1
    rank, world = _info["rank"], _info["world"]
    mine = f"{block.token}:{block.nbytes}"
    store.set(f"pkb_symm/{seq}/{rank}", mine)
    got = [store.get(f"pkb_symm/{seq}/{r}").decode() for r in range(world)]
    for r, g in enumerate(got):
        if g != mine:
            raise RuntimeError(f"rendezvous {seq}: rank {rank} has its buffer at segment:offset:bytes {mine} of "
                               f"pkb's symmetric memory, rank {r} at {g}; every rank must make the same "
                               "symm_mem.empty calls (same sizes, same order) and free them alike")
    return got


class _Handle:
    """What rendezvous returns (torch's _SymmetricMemory): attributes are fixed, as torch's."""

    __slots__ = ("_block", "_tensor", "_ptrs", "_pads", "_ptrs_dev", "_pads_dev", "_device", "rank", "world_size",
                 "_pad_bytes", "_offset", "__weakref__")

    def __init__(self, block, tensor, _agreed):
        info = _info
        self._block = block
        self._tensor = tensor  # keeps the allocation alive as torch's handle does
        self.rank, self.world_size = info["rank"], info["world"]
        local = block.ptr
        buffer = (max(block.nbytes, 1) + 255) // 256 * 256  # as _pkb.symm_empty lays a block out
        self._pad_bytes = info["signal_pad_bytes"]
        self._ptrs = list(block.peers)
        self._pads = [p + buffer for p in self._ptrs]
        self._device = tensor.device
        self._ptrs_dev = torch.tensor(self._ptrs, dtype=torch.int64, device=tensor.device)
        self._pads_dev = torch.tensor(self._pads, dtype=torch.int64, device=tensor.device)
        self._offset = (tensor.data_ptr() - local)

    # ---- torch's attributes -------------------------------------------------------------
    @property
    def buffer_ptrs(self):
        return list(self._ptrs)

    @property
    def buffer_ptrs_dev(self):
        return self._ptrs_dev.data_ptr()

    @property
    def signal_pad_ptrs(self):
        return list(self._pads)

    @property
    def signal_pad_ptrs_dev(self):
        return self._pads_dev.data_ptr()

    @property
    def buffer_size(self):
        return self._block.nbytes

    @property
    def signal_pad_size(self):
        return self._pad_bytes

    @property
    def multicast_ptr(self):
        return 0

    @property
    def device(self):
        return self._device

    @property
    def offset(self):
        return self._offset

    def has_multicast_support(self):
        return False

    def get_buffer(self, rank, sizes, dtype, storage_offset=0):
        """A view of `rank`'s buffer (mapped here) of `sizes` and `dtype`."""
        return _view(self._ptrs[rank], sizes, dtype, storage_offset, self._block.nbytes, self._device, "buffer")

    get_remote_tensor = get_buffer

    def get_signal_pad(self, rank, sizes=None, dtype=torch.uint32, storage_offset=0):
        if sizes is None:
            sizes = [self._pad_bytes // torch.empty((), dtype=dtype).element_size() - storage_offset]
        return _view(self._pads[rank], sizes, dtype, storage_offset, self._pad_bytes, self._device, "signal pad")

    def barrier(self, channel=0, timeout_ms=0):
        """Every rank of the group meets here (on the current stream, CUDA): torch's protocol
        on this allocation's signal pads, slots channel * world_size + rank."""
        self._check_channel(channel)
        _pkb.symm_barrier(self.signal_pad_ptrs_dev, self._pads, self.rank, self.world_size, int(channel),
                          _stream_ptr(self._device))

    def put_signal(self, dst_rank, channel=0, timeout_ms=0):
        self._check_channel(channel)
        _pkb.symm_signal(self._pads[dst_rank], int(channel) * self.world_size + self.rank, True,
                         _stream_ptr(self._device))

    def wait_signal(self, src_rank, channel=0, timeout_ms=0):
        self._check_channel(channel)
        _pkb.symm_signal(self._pads[self.rank], int(channel) * self.world_size + int(src_rank), False,
                         _stream_ptr(self._device))

    def _check_channel(self, channel):
        if not 0 <= int(channel) < self._pad_bytes // 4 // self.world_size:
            raise ValueError(f"channel {channel}: the signal pad holds channels 0 to "
                             f"{self._pad_bytes // 4 // self.world_size - 1}")

    def __repr__(self):
        return f"<pkb symmetric memory handle: rank {self.rank} of {self.world_size}, {self._block.nbytes} bytes>"


def _view(ptr, sizes, dtype, storage_offset, limit, device, what):
    from pkb import _CODE, _contiguous
    if isinstance(sizes, int):
        sizes = [sizes]
    sizes = tuple(int(s) for s in sizes)
    size = torch.empty((), dtype=dtype).element_size()
    n = 1
    for s in sizes:
        n *= s
    if (storage_offset + n) * size > limit:
        raise RuntimeError(f"get_{what.replace(' ', '_')}: {sizes} of {dtype} at offset {storage_offset} is past the "
                           f"{limit} bytes of the {what}")
    dev = device.index if device.type == "cuda" else -1
    return _pkb.tensor(ptr + storage_offset * size, sizes, _contiguous(sizes), _CODE[dtype], dev)


# ---- the module's other functions, as torch's -----------------------------------------------

def enable_symm_mem_for_group(group_name):
    """Nothing to do: pkb's symmetric memory spans the default group."""


def is_symm_mem_enabled_for_group(group_name):
    return True


def get_signal_pad_size():
    return _info["signal_pad_bytes"] if _info else 32 * 72 * 4


def set_signal_pad_size(size):
    if int(size) != get_signal_pad_size():
        raise RuntimeError(f"set_signal_pad_size({size}): pkb's symmetric memory has signal pads of "
                           f"{get_signal_pad_size()} bytes (torch's default)")


def is_nvshmem_available():
    return False


def get_backend(device):
    return "CUDA" if torch.device(device).type == "cuda" else None


def set_backend(name):
    if name != "CUDA":
        raise RuntimeError(f"set_backend({name!r}): pkb's symmetric memory is its own heap (as torch's CUDA backend)")


class _SymmetricMemory:
    """torch's class of the same name, for modules that reach it directly."""

    @staticmethod
    def empty_strided_p2p(size, stride, dtype, device, group_name=None, alloc_id=None):
        t = empty(tuple(size), dtype=dtype, device=device)
        return t.as_strided(tuple(size), tuple(stride))

    @staticmethod
    def rendezvous(tensor, group_name=None):
        return rendezvous(tensor, group_name)

    @staticmethod
    def has_multicast_support(device_type=None, device_idx=None):
        return False


def __getattr__(name):
    raise AttributeError(f"pkb's torch.distributed._symmetric_memory has no {name!r}: pkb provides empty, rendezvous "
                         "and the handle's pointers, signal pads and barrier (torch's fused collectives and ops on "
                         "symmetric memory are not available to original-format candidates)")
