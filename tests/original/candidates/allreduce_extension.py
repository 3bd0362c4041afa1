# An original-format module for coll_allreduce that builds its kernel with the original's
# utils.cuda_helpers.compile_cuda_extension (lazily, on the first call, from module
# constants). On the CPU device pkb builds the source as C++; pkb built it before the run.
import torch
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

EXT_NAME = "pkb_test_twice_ext"
SRC = r'''
#include <torch/extension.h>

// out = 2 * x - x, the long way round (a kernel of "ours" on the hot path).
torch::Tensor twice_minus(torch::Tensor x) { return x.mul(2).sub(x); }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("twice_minus", &twice_minus, "2x - x"); }
'''

_ext = None


def _get_ext():
    global _ext
    if _ext is None:
        _ext = compile_cuda_extension(EXT_NAME, SRC)
    return _ext


def solution(tensor):
    out = _get_ext().twice_minus(tensor)
    dist.all_reduce(out)
    return out
