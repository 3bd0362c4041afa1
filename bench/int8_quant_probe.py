"""Where dp_int8_quant_grad_allreduce's reference spends its time at --size large.

The reference (reference/dp_int8_quant_grad_allreduce.cpp) views the flat bf16 gradient as
blocks of 128, takes each block's amax as an inf-norm read from bf16 into fp32, the scale
max(amax, 1e-8) / 127 (an IEEE division: by a device scalar, as pkb::divide_exactly does),
then writes the fp32 quotient x / s, rounds it (half to even) and clamps it in place, casts
it to int8, multiplies the codes by the scales into fp32, all-reduces that (in place: no
work at W = 1), divides it by W in place and rounds it to bf16. This times each pass alone
on the large preset's shapes (n = M N elements, W = 1), the whole body, and whole bodies
with other ATen forms: the reciprocal's product for the quotient, fp32 all through (no
int8 codes: the fp32 values are what the all-reduce sends), no clamp (it never fires),
fake_quantize_per_channel_affine and quantize_per_channel with the blocks as channels,
fake_quantize_per_tensor_affine (one scale: other codes, its pace only) and the tail's
division rounded into bf16 in one op - beside one read of the gradient (the memory's
pace). The reference quantizes one flat tensor, so no _foreach form applies. Prints a
markdown table, then each alternative's agreement with the reference's mean. Needs CUDA.

Its steps time the reference as it was before its rewrite, which these tables decided:
the reference now does the fp32-throughout form without the clamp, dividing into bf16 in one
op (the alternatives "no clamp" and "the tail").

Smoke test on the CPU (host clock, small shapes): PKB_PROBE_DEVICE=cpu python3
bench/int8_quant_probe.py 256 1000 (n not a multiple of the block: the padded path).
"""
import sys

import torch
import torch.nn.functional as F

from event_timing import DEVICE as DEV, print_probe

W, BLOCK = 1, 128


def main():
    m, k = (int(a) for a in (sys.argv[1:3] if len(sys.argv) > 2 else (16384, 16384)))
    n = max(m * k, 64 * W)
    pad = (BLOCK - n % BLOCK) % BLOCK
    g = torch.Generator(device=DEV).manual_seed(0)
    chunks = (n + 31) // 32  # as make_inputs: randn times exp(U(-1.5, 1.5)) per 32 elements
    factor = torch.rand(chunks, 1, device=DEV, generator=g).mul_(3).sub_(1.5).exp_().expand(chunks, 32)
    grad = torch.randn(chunks, 32, device=DEV, generator=g).mul_(factor).reshape(-1)[:n].bfloat16()
    # pkb::divide_exactly's device scalar: ATen's CUDA divide by a CPU scalar multiplies by its reciprocal
    d127 = torch.scalar_tensor(127.0, device=DEV)

    def blocks_and_scales():
        flat = grad.reshape(-1)
        x = (F.pad(flat, (0, pad)) if pad else flat).view(-1, BLOCK)
        amax = torch.linalg.vector_norm(x, float("inf"), dim=1, keepdim=True, dtype=torch.float32)
        return x, amax.clamp_min_(1e-8).div(d127)

    def tail(acc):  # unpad, all-reduce (nothing at W = 1), / W, round to bf16
        acc = acc.reshape(-1)
        if pad:
            acc = acc[:n].contiguous()
        return acc.div_(W).to(grad.dtype)

    def codes_of(x, scale):
        return torch.div(x, scale).round_().clamp_(-127, 127).to(torch.int8)

    def body():
        x, scale = blocks_and_scales()
        return tail(torch.mul(codes_of(x, scale), scale))

    x, scale = blocks_and_scales()
    quo = torch.div(x, scale)
    buf = torch.empty_like(quo)
    q8 = codes_of(x, scale)
    acc = torch.mul(q8, scale).reshape(-1)
    out = torch.empty(n, device=DEV, dtype=grad.dtype)
    zp = torch.zeros(scale.numel(), device=DEV, dtype=torch.int32)

    def reciprocal():
        x, scale = blocks_and_scales()
        return tail(torch.mul(x, 1 / scale).round_().clamp_(-127, 127).to(torch.int8) * scale)

    def fp32_through():
        x, scale = blocks_and_scales()
        return tail(torch.div(x, scale).round_().clamp_(-127, 127).mul_(scale))

    def no_clamp():
        x, scale = blocks_and_scales()
        return tail(torch.div(x, scale).round_().mul_(scale))

    # fake_quantize_*: codes by x * (1/s), and on CUDA a mask (for backward) written by a kernel of its own
    def fake_quant_bf16():  # its output rounds q * s to bf16: the whole answer at W = 1 only
        x, scale = blocks_and_scales()
        return tail(torch.fake_quantize_per_channel_affine(x, scale.view(-1), zp, 0, -127, 127))

    def fake_quant_fp32():  # fp32 values, as a sum over ranks needs: an fp32 copy first
        x, scale = blocks_and_scales()
        return tail(torch.fake_quantize_per_channel_affine(x.float(), scale.view(-1), zp, 0, -127, 127))

    # x / s in double on CUDA (x * (1/s) on the CPU); qint8 is [-128, 127] but no quotient rounds below -127
    def quantize_channel():
        x, scale = blocks_and_scales()
        return tail(torch.quantize_per_channel(x.float(), scale.view(-1), zp.long(), 0, torch.qint8).dequantize())

    one = (grad.float().abs().max() / 127).item()

    def fake_quant_tensor():  # one scale for all: other codes by design, timed for its pace
        x, _ = blocks_and_scales()
        return tail(torch.fake_quantize_per_tensor_affine(x, one, 0, -127, 127))

    def fused_tail():
        x, scale = blocks_and_scales()
        acc = torch.mul(codes_of(x, scale), scale).reshape(-1)
        return torch.div(acc[:n], W, out=out)

    alternatives = [
        ("quotient as the reciprocal's product, round(x * (1/s))", reciprocal),
        ("fp32 all through: x / s rounded, clamped, times s in place (no int8)", fp32_through),
        ("fp32 all through, no clamp: x / s rounded, times s", no_clamp),
        ("fake_quantize_per_channel_affine on bf16 (bf16 out)", fake_quant_bf16),
        ("fake_quantize_per_channel_affine on an fp32 copy", fake_quant_fp32),
        ("quantize_per_channel (qint8) of an fp32 copy, dequantize", quantize_channel),
        ("fake_quantize_per_tensor_affine on bf16, one scale (not per block)", fake_quant_tensor),
        ("the tail: / W rounded into bf16 in one op (out=)", fused_tail),
    ]
    steps = [
        ("one read of the gradient (sum)", lambda: grad.sum()),
        ("amax: inf-norm of each block, from bf16 into fp32", lambda: torch.linalg.vector_norm(
            x, float("inf"), dim=1, keepdim=True, dtype=torch.float32)),
        ("scale: clamp_min_, / 127 (one value a block)", lambda: scale.clamp_min(1e-8).div(d127)),
        ("quotient: bf16 x / fp32 scale into fp32", lambda: torch.div(x, scale)),
        ("round (the reference's round_ in place)", lambda: torch.round(quo, out=buf)),
        ("clamp to [-127, 127] (the reference's clamp_ in place)", lambda: torch.clamp(quo, -127, 127, out=buf)),
        ("cast to int8", lambda: quo.to(torch.int8)),
        ("dequantize: int8 codes x fp32 scales into fp32", lambda: torch.mul(q8, scale)),
        ("/ W in place (fp32; W = 1)", lambda: acc.div_(W)),
        ("round the mean to bf16", lambda: acc.to(grad.dtype)),
        ("whole body (the reference's; the all-reduce a no-op at W = 1)", body),
    ]
    gb = n * 2 / 1e9
    alternatives = print_probe(f"dp_int8_quant_grad_allreduce steps, n={n} (M={m} N={k}, blocks of {BLOCK}, W=1, "
                               f"{gb:.2f} GB of bf16 gradient)", steps, alternatives, "alt, whole body: ")

    ref = body()
    wild = (torch.div(x, scale).round_().abs() > 127).sum().item()
    print(f"\nquotients rounding outside [-127, 127] before the clamp: {wild} of {x.numel()}")
    print("agreement with the reference's mean (bf16; a code one step off moves a value by its scale s):")
    for name, fn in alternatives:
        diff = (fn().float() - ref.float()).abs()
        print(f"- {name}: max |diff| {diff.max().item():.2e}, differing {(diff > 0).sum().item()} of {n}")


if __name__ == "__main__":
    main()
