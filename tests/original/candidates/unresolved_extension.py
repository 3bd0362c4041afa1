# BAD original-format module for coll_allreduce: its extension's name is made from the rank
# when the module runs, so pkb cannot build it before the run. Expected verdict: wrong, the
# message naming the call and why.
import torch.distributed as dist
from utils.cuda_helpers import compile_cuda_extension

SRC = "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}"


def solution(tensor):
    compile_cuda_extension(f"ext_rank{dist.get_rank()}", SRC)
    out = tensor.clone()
    dist.all_reduce(out)
    return out
