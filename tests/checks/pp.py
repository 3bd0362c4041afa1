"""The Pipeline Parallel problem recomputed in fp64 from every rank's saved inputs (see
check_problem.py): the two stages run one after the other over the whole sequence."""
from checks.cp import ring_attention_pp


def stage_groups(w, spec):
    cp = w // min(2, w)
    # each stage's weights are replicated across its CP group
    return {"w_qkv": [r // cp for r in range(w)], "w_o": [r // cp for r in range(w)]}


PROBLEMS = {
    "pp_ring_attention_pp": ring_attention_pp,
}

REPLICATED = {
    "pp_ring_attention_pp": stage_groups,
}
