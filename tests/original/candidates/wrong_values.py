# BAD original-format module for coll_allreduce: returns its own input (no communication).
# Expected verdict: wrong.
def solution(tensor):
    return tensor.clone()
