"""Checks what `pkb dryrun --save-outputs DIR` wrote for a problem against an independent
recomputation.

Loads every rank's rank_<r>.pt and rank_<r>_inputs.pt (plain torch.load), recomputes each
rank's outputs in fp64 from all ranks' inputs with the function that tests/checks/<category>.py
lists for the problem in its PROBLEMS table, and asserts that
  * the reference is within HALF the spec's tolerance of the exact answer (so a candidate
    that errs as much the other way, e.g. another summation order, still passes); fp8 and
    integer outputs within the whole tolerance;
  * an all-zero answer and the inputs passed through (as pkb validate picks them) fail;
  * with --nocomm DIR2 (a `dryrun --no-comm` run with the same --seed), that answer fails;
  * per-rank inputs differ between ranks and shared ones are equal; an input a category lists
    in its REPLICATED table ({problem: fn(w, spec) -> {input: group id per rank}}), such as
    activations replicated within a TP group or weights within a CP group, is equal exactly
    between the ranks of one group.

A recomputation takes (xs, w, spec): every rank's inputs (dicts of tensors), W and the spec
(its [args] and [vars] always present) and returns a list (per rank) of lists (per output)
of tensors, fp64 (or complex128, or an integer type for integer outputs).

usage: check_problem.py PROBLEM[,PROBLEM...] DIR W [--nocomm DIR2] [--verbose]
Several problems (one Python start for a family): each one's files in DIR/<problem>/, as
`pkb dryrun` and `pkb validate` save several (and --nocomm DIR2/<problem>/).
"""
import argparse
import importlib
import os
import sys
import tomllib

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
f64 = torch.float64

# pkb's per-dtype default tolerances (src/spec/dtype.cpp), for outputs that give none.
DEFAULT_TOL = {"bf16": (1e-2, 1e-2), "fp16": (1e-3, 1e-3), "fp32": (1e-4, 1e-4), "fp64": (1e-9, 1e-9),
               "fp8_e4m3": (1e-2, 0.125), "fp8_e5m2": (1e-2, 0.25), "complex64": (1e-4, 1e-4),
               "complex128": (1e-9, 1e-9)}


def load(path):
    """Plain torch.load (weights_only=True): what pkb saves must load so, fp8 included."""
    return torch.load(path)


def outputs_of(path):
    y = load(path)
    if isinstance(y, torch.Tensor):
        return [y]
    return [y[f"output_{i}"] for i in range(len(y))]


def real(t):
    """fp64 values to compare: complex tensors as (re, im) pairs, so both parts count."""
    if t.is_complex():
        return torch.view_as_real(t.to(torch.complex128))
    return t.to(f64)


DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32", torch.float64: "fp64",
               torch.float8_e4m3fn: "fp8_e4m3", torch.float8_e5m2: "fp8_e5m2", torch.complex64: "complex64",
               torch.complex128: "complex128"}


def tolerance(o, y):
    """An output's tolerance, as pkb's comparison takes it: the spec's atol/rtol, else the
    defaults of the reference's element type `y.dtype` (which `--dtype` may have changed)."""
    atol, rtol = DEFAULT_TOL.get(DTYPE_NAMES.get(y.dtype, ""), (0.0, 0.0))
    return o.get("atol", atol), o.get("rtol", rtol)


def fails(got, want, atol, rtol, mismatch=0.0):
    """pkb's comparison (eval/compare.cpp): does `got` fail against the reference `want`?
    Up to floor(mismatch * numel) elements may lie outside, none of them NaN."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return True
    g, w = real(got), real(want)
    fine = g.eq(w) | (g.isnan() & w.isnan()) | (g - w).abs().le(atol + rtol * w.abs())
    if got.is_complex():
        fine = fine.all(-1)
    if bool((g.isnan() & ~w.isnan()).any()):
        return True
    return int((~fine).sum()) > int(mismatch * want.numel())


def passthrough(inputs, want):
    for x in inputs.values():
        if x.shape == want.shape and x.dtype == want.dtype:
            return x
    for x in inputs.values():
        if x.numel() == want.numel() and x.dtype == want.dtype:
            return x.reshape(want.shape)
    for x in inputs.values():
        if x.shape == want.shape:
            return x.to(want.dtype)
    return torch.zeros_like(want)


def recomputation(problem, spec):
    module = importlib.import_module("checks." + spec["category"])
    if problem not in module.PROBLEMS:
        raise SystemExit(f"tests/checks/{spec['category']}.py has no recomputation for {problem}")
    return module.PROBLEMS[problem]


def replicated(problem, spec, w):
    """{input: group id per rank} for inputs replicated within sub-groups of ranks."""
    module = importlib.import_module("checks." + spec["category"])
    fn = getattr(module, "REPLICATED", {}).get(problem)
    return fn(w, spec) if fn else {}


def check(problem, d, w, nocomm=None, verbose=False):
    """The errors found in what the reference saved for `problem` under d (none: [])."""
    with open(os.path.join(ROOT, "problems", problem + ".toml"), "rb") as f:
        spec = tomllib.load(f)
    spec.setdefault("args", {})
    spec.setdefault("vars", {})
    inputs = [load(f"{d}/rank_{r}_inputs.pt") for r in range(w)]
    got = [outputs_of(f"{d}/rank_{r}.pt") for r in range(w)]
    exact = recomputation(problem, spec)(inputs, w, spec)
    outs = spec["outputs"]
    errors = []

    for r in range(w):
        for i, o in enumerate(outs):
            y, e = got[r][i], exact[r][i]
            atol, rtol = tolerance(o, y)
            if tuple(y.shape) != tuple(e.shape):
                errors.append(f"rank {r} {o['name']}: shape {tuple(y.shape)}, expected {tuple(e.shape)}")
                continue
            # fp8 codes and integers: the reference may sit one step from the exact rounding
            # (integers: exactly on it, atol 0); others within half the tolerance.
            share = 1.0 if y.dtype == torch.float8_e4m3fn or not (y.is_floating_point() or y.is_complex()) else 0.5
            err = (real(y) - real(e)).abs()
            limit = atol + rtol * real(e).abs()
            scaled = torch.where(err == 0, torch.zeros_like(err), err / limit.clamp_min(1e-300))
            ratio = scaled.max().item() if y.numel() else 0.0
            if verbose or ratio > share:
                print(f"rank {r} {o['name']}: max |ref - exact| {err.max().item() if y.numel() else 0:.3g}, "
                      f"{ratio:.3f} of the tolerance (limit {share})")
            if not ratio <= share:
                errors.append(f"rank {r} {o['name']}: reference off the exact answer by {ratio:.3f} of the tolerance")

    def rejected(answers):
        return any(fails(answers[r][i], got[r][i], *tolerance(o, got[r][i]), o.get("mismatch", 0.0))
                   for r in range(w) for i, o in enumerate(outs))

    if w > 1:
        if not rejected([[torch.zeros_like(y) for y in got[r]] for r in range(w)]):
            errors.append("an all-zero answer passes")
        if not rejected([[passthrough(inputs[r], y) for y in got[r]] for r in range(w)]):
            errors.append("the inputs passed through pass")
        if nocomm:
            lonely = [outputs_of(f"{nocomm}/rank_{r}.pt") for r in range(w)]
            lonely_in = [load(f"{nocomm}/rank_{r}_inputs.pt") for r in range(w)]
            if any(not torch.equal(lonely_in[r][k], inputs[r][k]) for r in range(w) for k in inputs[r]):
                errors.append("the --no-comm run got other inputs (use the same --seed)")
            elif not rejected(lonely):
                errors.append("the answer without communication passes")
        groups = replicated(problem, spec, w)
        for name, g in groups.items():
            for r in range(w):
                for q in range(r + 1, w):
                    same = torch.equal(inputs[r][name], inputs[q][name])
                    if same != (g[r] == g[q]) and inputs[r][name].numel() > 1:
                        errors.append(f"input {name} is {'equal' if same else 'different'} on ranks {r} and {q}, "
                                      f"groups {g[r]} and {g[q]}")
        for spec_in in spec.get("inputs", []):
            name = spec_in["name"]
            if name in groups:
                continue
            same = all(torch.equal(inputs[0][name], inputs[r][name]) for r in range(1, w))
            if spec_in.get("shared", False) and not same:
                errors.append(f"shared input {name} differs between ranks")
            if not spec_in.get("shared", False) and inputs[0][name].numel() > 1 and torch.equal(inputs[0][name], inputs[1][name]):
                errors.append(f"per-rank input {name} is equal on ranks 0 and 1")

    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("problems", help="a problem, or several separated by commas")
    ap.add_argument("dir")
    ap.add_argument("world", type=int)
    ap.add_argument("--nocomm", help="outputs of `dryrun --no-comm` with the same seed")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args()
    problems = a.problems.split(",")
    failed = 0
    for p in problems:
        sub = (lambda d: d and f"{d}/{p}") if len(problems) > 1 else (lambda d: d)
        errors = check(p, sub(a.dir), a.world, sub(a.nocomm), a.verbose)
        print(f"{p} W={a.world}: " + ("FAILED" if errors else "ok"))
        for e in errors:
            print("  " + e)
        failed += bool(errors)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
