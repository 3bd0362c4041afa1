# BAD original-format module for coll_allreduce: starts a process running a shell. As for
# pkb's .py candidates, a process may start (Triton runs its compilers) but no program
# other than the compilers may run: the shell is denied and the module answers right.
# Were the shell allowed, the answer would be wrong on purpose (verdict "wrong").
# Expected verdict: correct.
import subprocess

import torch.distributed as dist

_ran = None


def solution(tensor):
    global _ran
    if _ran is None:
        try:
            subprocess.run(["/bin/sh", "-c", "true"], check=True)
            _ran = True
        except OSError:
            _ran = False
    out = tensor.clone()
    dist.all_reduce(out)
    return out + 1 if _ran else out
