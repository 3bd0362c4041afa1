# A ParallelKittens-style module (the original's third backend): it needs the original's
# utils.parallelkittens_runtime, which pkb does not provide. Expected: compile_error naming it.
import torch
from utils.parallelkittens_runtime import get_or_create_parallel_tensor


def solution(tensor):
    return get_or_create_parallel_tensor(None, tensor.shape)
