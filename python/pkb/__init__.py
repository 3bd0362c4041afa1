"""pkb's side of a Python candidate (a .py file for `pkb eval`).

A candidate module defines

    def pkb_run(ctx, inputs, outputs): ...    # required, timed: compute the outputs
    def pkb_init(ctx, inputs, outputs): ...   # optional, untimed, once: allocate, compile
    def pkb_finalize(ctx): ...                # optional

with the contract of the C ABI (include/pkb/solution.h): `inputs` and `outputs` are torch
tensors that are views of pkb's own buffers in the symmetric heap (no copies), in spec order
and by name (`inputs[0]`, `inputs["x"]`, `inputs.x`). Inputs are read-only; every element of
every output must be written on every call (pkb fills outputs with NaN first). In pkb_init
the tensors have their shapes and dtypes but no storage of their own: write nothing there.
pkb_run returning None or 0 is success; a non-zero int or an exception is a failure (the
traceback is reported).

On the CUDA device all work must be ordered on ctx.stream, which is torch's current stream
during every call (Triton launches there by default). On the CPU device all work must be
done when pkb_run returns.

The rank process builds Ctx and Tensors (src/python/python_candidate.cpp); candidates never
construct them. `_pkb` is the rank's built-in module: it makes tensors over pkb's memory and
reaches the pkb_ctx's callbacks.
"""

import os

import torch

import _pkb

# The process that imported this package: a rank's own, or the fork server's that imported
# torch once for all the ranks it forks (src/launch/fork_server.hpp).
IMPORTED_IN = os.getpid()

# pkb_dtype numbers (include/pkb/solution.h), in order.
DTYPES = [torch.bfloat16, torch.float16, torch.float32, torch.float64, torch.int8, torch.int16, torch.int32,
          torch.int64, torch.uint8, torch.bool, torch.float8_e4m3fn, torch.float8_e5m2, torch.complex64,
          torch.complex128]
_CODE = {d: i for i, d in enumerate(DTYPES)}


class Tensors(list):
    """The inputs or outputs of a call in spec order, also by name: t[0], t["x"], t.x."""

    __slots__ = ("_names", "_sizes")

    def __init__(self, tensors, names):
        super().__init__(tensors)
        self._names = names  # name -> index, shared by every call
        self._sizes = None

    def _index(self, key):
        if isinstance(key, str):
            try:
                return self._names[key]
            except KeyError:
                raise KeyError(f"no tensor named {key!r}; these are {list(self._names)}") from None
        return key

    def __getitem__(self, key):
        return list.__getitem__(self, self._index(key))

    def __getattribute__(self, name):
        # A tensor's name wins over a list method of the same name (inputs.count is the
        # tensor named count, not list.count).
        if not name.startswith("_"):
            names = object.__getattribute__(self, "_names")
            if name in names:
                return list.__getitem__(self, names[name])
        return object.__getattribute__(self, name)

    def __getattr__(self, name):
        raise AttributeError(f"no tensor named {name!r}; these are {list(self._names)}")

    def names(self):
        return list(self._names)

    def set_size(self, key, dim, size):
        """For an output whose dim `dim` is data-dependent ("<= capacity" in the spec): the
        size this call produced (the tensor itself keeps its capacity)."""
        if self._sizes is None:
            self._sizes = []
        self._sizes.append((self._index(key), int(dim), int(size)))


class Ctx:
    """What a call knows besides its tensors. Attributes:

    rank, world      this rank and the number of ranks
    device           torch.device of this rank (cuda:N, or cpu)
    stream           the torch.cuda stream pkb times (torch's current stream in every call);
                     None on the CPU device
    problem, args    the problem's slug; its [args], sizes and vars by name (also ctx.arg(name))
    pads             every rank's signal pad as an int32 tensor of pad_slots slots (slot
                     channel * world + src is where rank src signals that pad's rank); the
                     last channel is pkb's, channels 0 .. channels-1 are yours
    heap_bases       int64 tensor [world] on the device: every rank's heap base address
    pad_ptrs         int64 tensor [world] on the device: every rank's pad address
    pad_offsets      int64 tensor [world] on the device: int32 slots from this rank's pad to
                     rank r's (what pkb.triton's signal/wait/barrier take)
    user             yours: anything kept across calls
    """

    def __init__(self, handle, info):
        self._h = handle
        self.rank = info["rank"]
        self.world = info["world"]
        self.problem = info["problem"]
        self.args = info["args"]
        dev = info["device"]
        self._dev = dev
        self.device = torch.device("cuda", dev) if dev >= 0 else torch.device("cpu")
        self.stream = torch.cuda.current_stream(self.device) if dev >= 0 else None
        self.pad_slots = info["pad_slots"]
        self.channels = self.pad_slots // self.world - 1
        i32 = _CODE[torch.int32]
        self.pads = [_pkb.tensor(p, (self.pad_slots,), (1,), i32, dev) for p in info["pads"]]
        i64 = _CODE[torch.int64]
        self.heap_bases = _pkb.tensor(info["heap_bases_dev"], (self.world,), (1,), i64, dev)
        self.pad_ptrs = _pkb.tensor(info["pads_dev"], (self.world,), (1,), i64, dev)
        mine = info["pads"][self.rank]
        self.pad_offsets = torch.tensor([(p - mine) // 4 for p in info["pads"]], dtype=torch.int64, device=self.device)
        self.user = None
        self._offsets = {}

    def __repr__(self):
        return f"pkb.Ctx(rank={self.rank}, world={self.world}, device={self.device}, problem={self.problem!r})"

    def arg(self, name, default=None):
        return self.args.get(name, default)

    def peer(self, tensor, rank, shape=None):
        """`rank`'s copy of `tensor` (an input, an output or a symm_alloc buffer): a tensor
        view of that rank's memory, mapped into this process. `shape` (contiguous) for a
        tensor whose shape depends on the rank (every rank's slot is sized for the largest);
        a tensor empty on this rank has no address here, so reach it from a rank where it
        is not (push rather than pull)."""
        ptr = _pkb.peer_ptr(self._h, tensor.data_ptr(), rank)
        if shape is None:
            shape, strides = tuple(tensor.shape), tuple(tensor.stride())
        else:
            shape, strides = tuple(int(s) for s in shape), _contiguous(shape)
        return _pkb.tensor(ptr, shape, strides, _CODE[tensor.dtype], self._dev)

    def peers(self, tensor):
        """Every rank's copy of `tensor`, by rank."""
        return [self.peer(tensor, r) for r in range(self.world)]

    def peer_offsets(self, dtype):
        """int64 tensor [world] on the device: how many `dtype` elements rank r's copy of any
        heap tensor lies from this rank's copy. In a Triton kernel, `x_ptr + offsets[r]`
        points at rank r's x (pkb.triton.peer)."""
        got = self._offsets.get(dtype)
        if got is None:
            size = torch.empty((), dtype=dtype).element_size()
            bases = _pkb.heap_bases(self._h)
            if any((b - bases[self.rank]) % size for b in bases):
                raise ValueError(f"heap bases are not {size}-byte aligned")
            got = torch.tensor([(b - bases[self.rank]) // size for b in bases], dtype=torch.int64, device=self.device)
            self._offsets[dtype] = got
        return got

    def symm_alloc(self, shape, dtype):
        """In pkb_init only: a buffer in the symmetric heap (every rank must make the same
        calls in the same order); ctx.peer() reaches the other ranks' copies."""
        shape = tuple(int(s) for s in shape)
        n = 1
        for s in shape:
            n *= s
        size = torch.empty((), dtype=dtype).element_size()
        ptr = _pkb.symm_alloc(self._h, max(n * size, 1))
        return _pkb.tensor(ptr, shape, _contiguous(shape), _CODE[dtype], self._dev)

    def host_barrier(self):
        """In pkb_init only: a host barrier of all ranks."""
        _pkb.host_barrier(self._h)

    def barrier(self, channel=0):
        """A barrier of every rank on `channel` of the signal pads: after it, every rank's
        work before it is visible to every rank. CUDA: pkb's one-block barrier kernel on
        ctx.stream (what CUDA candidates' pkb::dev::barrier launches; pkb.triton has the
        same barrier written in Triton, for use inside kernels); CPU: a spin on the host, or
        pkb.triton's kernel under Triton's interpreter (TRITON_INTERPRET=1), which is how
        tests run Triton code without a GPU."""
        if self._dev < 0 and _triton_interpreted():
            from pkb import triton as pkb_triton
            pkb_triton.barrier_on_stream(self, channel)
        else:
            _pkb.pad_barrier(self._h, channel)


def _triton_interpreted():
    import os
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _contiguous(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= int(s)
    return tuple(reversed(strides))


def _tensors(tensors, names):
    return Tensors(tensors, names)


def _load(path):
    """Imports the candidate at `path` (its copy in pkb's build cache) as module
    `pkb_candidate` (inside the sandbox). Returns the module, or the error as text: the
    traceback from the candidate's own frames on. Its code is compiled under the name of
    the user's file (the cache's `source_path` beside the copy), so tracebacks and Triton
    (which reads kernels' source through linecache) name that file, never the copy."""
    import importlib.util
    import linecache
    import os
    import sys
    import traceback
    shown = path
    try:
        with open(os.path.join(os.path.dirname(path), "source_path"), encoding="utf-8") as f:
            shown = f.read().strip() or path
    except OSError:
        pass
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        spec = importlib.util.spec_from_file_location("pkb_candidate", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["pkb_candidate"] = module
        # The lines come from the copy (the user's file may be out of the sandbox's reach);
        # an entry without a modification time is never checked against the disk.
        linecache.cache[shown] = (len(source), None, source.splitlines(True), shown)
        exec(compile(source, shown, "exec", dont_inherit=True), module.__dict__)
        return module
    except BaseException as e:  # noqa: B902 (SystemExit too: the import failed)
        tb = e.__traceback__
        while tb is not None and (tb.tb_frame.f_code.co_filename == __file__ or
                                  tb.tb_frame.f_code.co_filename.startswith("<frozen")):
            tb = tb.tb_next
        return "".join(traceback.format_exception(type(e), e, tb)).rstrip()


def sandbox_needs(cuda):
    """Before the sandbox: what this interpreter and Triton need from it, as lists of paths
    ("read", "write", "exec"). On CUDA, Triton is imported and its driver started here (its
    helper module is compiled now, as pkb's own work); inside the sandbox it still compiles
    each kernel with ptxas and each launcher with the C compiler, which are the only
    programs a candidate may run."""
    import os
    import shutil
    import sys
    import sysconfig

    read = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))), sysconfig.get_paths()["include"]}
    read.update(p for p in sys.path if p)
    write, programs = [], []
    cache = os.environ.get("TRITON_CACHE_DIR")
    if cache:
        os.makedirs(cache, exist_ok=True)
        write.append(cache)
    # The C compiler Triton builds launchers with (its choice: $CC, else gcc, else clang)
    # and every program that compiler runs, each with what the kernel opens to start it.
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")
    if cc:
        programs += _compiler_programs(shutil.which(cc) or cc)
    if cuda:
        try:
            import triton
        except ImportError:
            triton = None
        if triton is not None:
            programs.append(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin"))
            for var in ("TRITON_PTXAS_PATH", "TRITON_PTXAS_BLACKWELL_PATH"):
                if os.environ.get(var):
                    programs.append(os.environ[var])
            # libcuda as this process has it mapped: Triton would ask ldconfig otherwise.
            if not os.environ.get("TRITON_LIBCUDA_PATH"):
                with open("/proc/self/maps") as maps:
                    for line in maps:
                        if line.rstrip().endswith("/libcuda.so.1") or "/libcuda.so." in line:
                            os.environ["TRITON_LIBCUDA_PATH"] = os.path.dirname(line.split()[-1])
                            break
            try:
                triton.runtime.driver.active.get_current_device()
            except Exception as e:  # the candidate's first launch will say it again
                print(f"pkb: Triton's driver did not start: {e}", file=sys.stderr)
    return {"read": sorted(p for p in read if p and os.path.exists(p)), "write": write,
            "exec": [p for p in programs if os.path.exists(p)]}


def _program_closure(path, seen=None):
    """A program and what the kernel also opens to execute it: the real file behind its
    links, a script's interpreter, an ELF file's dynamic loader (PT_INTERP)."""
    import os
    import shlex
    import shutil
    import struct

    seen = set() if seen is None else seen
    real = os.path.realpath(path)
    if real in seen or not os.path.isfile(real):
        return seen
    seen.update({path, real})
    try:
        with open(real, "rb") as f:
            head = f.read(64)
            if head.startswith(b"#!"):
                f.seek(0)
                words = shlex.split(f.readline()[2:].decode(errors="replace"))
                if words:
                    _program_closure(words[0], seen)
                    if os.path.basename(words[0]) == "env" and len(words) > 1:
                        found = shutil.which(words[1])
                        if found:
                            _program_closure(found, seen)
            elif head[:4] == b"\x7fELF" and head[4] == 2:  # 64-bit: find PT_INTERP
                phoff, = struct.unpack_from("<Q", head, 32)
                f.seek(0)
                hdr = f.read(64)
                phentsize, phnum = struct.unpack_from("<HH", hdr, 54)
                for i in range(phnum):
                    f.seek(phoff + i * phentsize)
                    ph = f.read(phentsize)
                    if struct.unpack_from("<I", ph, 0)[0] == 3:  # PT_INTERP
                        off, = struct.unpack_from("<Q", ph, 8)
                        size, = struct.unpack_from("<Q", ph, 32)
                        f.seek(off)
                        _program_closure(f.read(size).rstrip(b"\0").decode(), seen)
    except (OSError, struct.error, ValueError, IndexError):
        pass
    return seen


def _compiler_programs(cc):
    """A C compiler and what it runs (cc1, as, collect2, ld, ...), as the compiler itself
    names them; a compiler installed under a prefix of its own (/opt/gcc) gets that prefix."""
    import os
    import shutil
    import subprocess

    out = _program_closure(cc)
    real = os.path.realpath(cc)
    prefix = os.path.dirname(os.path.dirname(real))
    if prefix not in ("/", "/usr", "/usr/local"):
        out.add(prefix)
    else:
        out.update(p for p in ("/usr/lib/gcc", "/usr/libexec/gcc", "/usr/lib/llvm") if os.path.isdir(p))
    for tool in ("cc1", "as", "ld", "collect2", "lto-wrapper", "ld.lld"):
        try:
            got = subprocess.run([cc, f"-print-prog-name={tool}"], capture_output=True, text=True,
                                 timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            continue
        found = got if os.path.isabs(got) else shutil.which(got)
        if found:
            _program_closure(found, out)
    return sorted(out)
