"""The rank's side of a candidate in the original ParallelKernelBench's format.

Such a candidate is a module defining `solution(*inputs)` that runs on every rank under the
default torch.distributed process group, uses torch's symmetric memory and builds its CUDA
through `utils.cuda_helpers.compile_cuda_extension` (docs/migrating.md). pkb runs it
unchanged:

- prepare(), before the sandbox (src/python/original_candidate.cpp calls it): the default
  process group over the candidate ranks, on a c10d store that is pkb's bootstrap channel
  (no socket of its own), NCCL where ranks have a GPU each and gloo elsewhere, with every
  connection made now (the sandbox denies new sockets later); pkb's symmetric memory
  (symm_mem.py, in pkb's heap) in place of torch.distributed._symmetric_memory, and pkb's
  utils.cuda_helpers (cuda_helpers.py: the extensions pkb built before the run) in place of
  the original's.
- Plan, on the first call: the problem spec's [original] arguments built from pkb's input
  buffers every call, and solution's result read into pkb's outputs (one tensor, a tuple or
  list, in the original's return order; a number for a 0-d output). A result that does not
  fit raises ResultError, which pkb reports as a wrong answer with its message.
"""

import ast
import os
import sys
import types

import torch

import _pkb

# What the original's harness passed that names no pkb input: its process group.
WORLD = "WORLD"


class ResultError(Exception):
    """solution returned something pkb cannot read as the problem's outputs."""


def prepare(info):
    """Before the sandbox. `info`: rank, world, device (-1: CPU), backend (nccl or gloo),
    library (the module's copy in the cache), problem, store (a c10d store over pkb's
    channel). Returns {"read": folders the sandbox must let the rank read}."""
    # c10d's background threads must never need the store or a new socket later: no
    # heartbeat monitor, no dumps on timeout (they talk through the store).
    for k, v in (("TORCH_NCCL_ENABLE_MONITORING", "0"), ("TORCH_NCCL_DUMP_ON_TIMEOUT", "0"),
                 ("TORCH_NCCL_PROPAGATE_ERROR", "0"), ("TORCH_DIST_INIT_BARRIER", "0")):
        os.environ[k] = v
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # the ranks share a node: loopback, no name lookup
    import torch.distributed as dist

    rank, world, dev = info["rank"], info["world"], info["device"]
    kwargs = {"backend": info["backend"], "store": info["store"], "rank": rank, "world_size": world}
    if info["backend"] == "nccl":
        kwargs["device_id"] = torch.device("cuda", dev)  # eager: NCCL's communicator is made here
    if dev >= 0:
        torch.cuda.set_device(dev)
    dist.init_process_group(**kwargs)
    _connect(dist, info)

    from pkb.original import cuda_helpers, symm_mem
    symm_mem._setup(info)
    read = cuda_helpers._setup(os.path.join(os.path.dirname(info["library"]), "extensions.json"))
    _install(dist, symm_mem, cuda_helpers, world)
    return {"read": read}


def _connect(dist, info):
    """Every connection the group will use, made now: NCCL connects lazily, and after the
    sandbox a new socket is denied (NCCL_RUNTIME_CONNECT=0 covers the collectives' rings and
    trees; an all-to-all connects every pair). gloo connects every pair while the group is
    made."""
    world, dev = info["world"], info["device"]
    if info["backend"] == "nccl":
        d = torch.device("cuda", dev)
        x = torch.ones(world * 64, device=d)
        y = torch.empty_like(x)
        dist.all_reduce(x)
        dist.all_to_all_single(y, x)
        dist.all_gather_into_tensor(torch.empty(world * world * 64, device=d), x)
        dist.broadcast(x, 0)
        torch.cuda.synchronize(d)
    dist.barrier()


def _install(dist, symm_mem, cuda_helpers, world):
    """Puts pkb's modules where the candidate imports them, and new_group where it can
    work inside the sandbox."""
    sys.modules["torch.distributed._symmetric_memory"] = symm_mem
    dist._symmetric_memory = symm_mem
    utils = sys.modules.get("utils")
    if utils is None or not hasattr(utils, "__path__"):
        utils = types.ModuleType("utils", "pkb's stand-in for the original ParallelKernelBench's utils package")
        utils.__path__ = []
        sys.modules["utils"] = utils
    utils.cuda_helpers = cuda_helpers
    sys.modules["utils.cuda_helpers"] = cuda_helpers

    c10d = dist.distributed_c10d
    real = c10d.new_group

    def new_group(ranks=None, *args, **kwargs):
        """Every rank: the default group (the same ranks, already connected). Some of them:
        a group that would need a new communicator, which the sandbox denies."""
        if ranks is None or sorted(int(r) for r in ranks) == list(range(world)):
            return dist.group.WORLD
        raise RuntimeError(
            f"dist.new_group(ranks={list(ranks)}): inside pkb's sandbox a process group of some of the ranks "
            "cannot be made (its communicator needs new sockets); pkb makes the default group of all ranks only")

    new_group.__wrapped__ = real
    dist.new_group = new_group
    c10d.new_group = new_group


# ---- a call ----------------------------------------------------------------------------

class Plan:
    """How one problem's solution is called and read (made once, on the first call).

    args: the spec's [original] args, each a Python expression over the problem's inputs
    (by name: the tensors, views of pkb's buffers), its [args] values, sizes and vars,
    WORLD (dist.group.WORLD), literals, tuples, lists, one-generator list comprehensions,
    arithmetic, indexing and slicing, a few methods that make views (x.t(), x.reshape(...),
    x.transpose(...), x.view(...), x.sum()) and these functions: list(x) (an integer tensor
    as a Python list), item(x) (a one-element tensor as a number), unbind(x) (a list of
    x's slices along dim 0), size(a, b, ...) (a torch.Size), range, len, sum, min, max, int,
    float. returns: the output names in the order solution returns them ("_" for a value
    pkb drops)."""

    CALLS = {"list": lambda x: x.tolist() if isinstance(x, torch.Tensor) else list(x),
             "item": lambda x: x.item(), "unbind": lambda x: list(x.unbind(0)),
             "size": lambda *d: torch.Size([int(v) for v in d]), "range": range, "len": len, "sum": sum,
             "min": min, "max": max, "int": int, "float": float}
    METHODS = {"t", "transpose", "reshape", "view", "sum"}
    NODES = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.Store, ast.Tuple, ast.List, ast.UnaryOp,
             ast.USub, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Subscript,
             ast.Slice, ast.Call, ast.Attribute, ast.ListComp, ast.comprehension)

    def __init__(self, solution, args, returns, input_names, outputs, values, problem):
        self.solution = solution
        self.problem = problem
        index = {n: i for i, n in enumerate(input_names)}
        self.builders = [self._compile(a, index, values) for a in args]
        self.out_index = {name: i for i, (name, _) in enumerate(outputs)}
        self.out_dtypes = [_dtype(code) for _, code in outputs]
        self.returns = list(returns)
        self.n_out = len(outputs)

    def _compile(self, text, index, values):
        """A function of the call's inputs (a list of tensors, in spec order) that builds
        one argument."""
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as e:
            raise ValueError(f"[original] argument {text!r}: {e.msg}") from None
        body = tree.body
        if isinstance(body, ast.Name) and body.id in index:  # the common case: an input as it is
            i = index[body.id]
            return lambda ins: ins[i]
        local = {t.id for n in ast.walk(tree) if isinstance(n, ast.comprehension) for t in ast.walk(n.target)
                 if isinstance(t, ast.Name)}
        used = []
        for n in ast.walk(tree):
            if not isinstance(n, self.NODES):
                raise ValueError(f"[original] argument {text!r}: pkb does not evaluate {type(n).__name__} here")
            if isinstance(n, ast.Call) and not (
                    (isinstance(n.func, ast.Name) and n.func.id in self.CALLS) or
                    (isinstance(n.func, ast.Attribute) and n.func.attr in self.METHODS)):
                raise ValueError(f"[original] argument {text!r}: no function {ast.unparse(n.func)!r} here")
            if isinstance(n, ast.Attribute) and n.attr not in self.METHODS:
                raise ValueError(f"[original] argument {text!r}: no method {n.attr!r} here")
            if isinstance(n, ast.Name) and n.id not in local and n.id not in self.CALLS:
                if n.id in index:
                    used.append(n.id)
                elif n.id not in values and n.id != WORLD:
                    raise ValueError(f"[original] argument {text!r}: no input, arg, size or var {n.id!r}")
        code = compile(tree, f"<[original] {text}>", "eval")
        import torch.distributed as dist
        env = {"__builtins__": {}, WORLD: dist.group.WORLD, **values, **self.CALLS}
        slots = [(n, index[n]) for n in dict.fromkeys(used)]

        def build(ins):
            e = dict(env)
            for n, i in slots:
                e[n] = ins[i]
            return eval(code, e)  # noqa: S307 (pkb's own spec text, checked above)
        return build

    def call(self, inputs):
        """solution(*args) on this call's inputs; its results, as tensors in output order."""
        got = self.solution(*[b(inputs) for b in self.builders])
        return self.results(got)

    def results(self, got):
        n = len(self.returns)
        if isinstance(got, dict):  # the original's harness saved a dict's values in its order
            got = tuple(got.values())
        if isinstance(got, torch.Tensor) or not isinstance(got, (tuple, list)):
            got = (got,)
        if len(got) != n:
            names = ", ".join(self.returns)
            raise ResultError(f"solution returned {len(got)} value{'s' if len(got) != 1 else ''}; the original's "
                              f"{self.problem} returns {n} ({names})")
        out = [None] * self.n_out
        for k, (name, value) in enumerate(zip(self.returns, got)):
            if name == "_":
                continue
            i = self.out_index[name]
            if isinstance(value, (bool, int, float)):
                value = torch.tensor(value, dtype=self.out_dtypes[i])  # a 0-d output returned as a number
            elif isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
                value = torch.stack(list(value))  # per-block tensors, where pkb has them stacked
            if not isinstance(value, torch.Tensor):
                raise ResultError(f"value {k} of what solution returned ({name}) is a {type(value).__name__}, "
                                  "not a tensor")
            out[i] = value
        return out


def _dtype(code):
    from pkb import DTYPES
    return DTYPES[code]
