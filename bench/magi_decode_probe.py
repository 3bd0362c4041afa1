"""Where cp_magi_tile_vae_decode's reference spends its time at --size large.

The reference (reference/cp_magi_tile_vae_decode.cpp) decodes its tiles in batches of one
shape (trilinear upsampling by 4 x 8 x 8 in dt), blends them in fp32 and crops them, then
places them into the video. This times the steps on the large preset's full tiles (the
largest batch shape: 3 x 32 x 32 latent cells -> 12 x 256 x 256, bf16) as one batch of all
224 tiles, beside a copy of the decoded tiles (the memory's pace). Prints a markdown table.
Needs CUDA.
"""
import sys

import torch
import torch.nn.functional as F

from event_timing import print_steps


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 224
    g = torch.Generator(device="cuda").manual_seed(0)
    lat = torch.randn(n, 3, 3, 32, 32, device="cuda", generator=g).bfloat16()
    dec = F.interpolate(lat, scale_factor=(4, 8, 8), mode="trilinear", align_corners=False)
    cur = dec.float()
    out = torch.empty(n, 3, 12, 192, 192, device="cuda", dtype=torch.bfloat16)
    steps = [
        ("upsample in bf16 (the decode)", lambda: F.interpolate(lat, scale_factor=(4, 8, 8), mode="trilinear", align_corners=False)),
        ("upsample in fp32", lambda: F.interpolate(lat.float(), scale_factor=(4, 8, 8), mode="trilinear", align_corners=False)),
        ("a copy of the decoded tiles (bf16)", lambda: dec.clone()),
        ("widen the decoded tiles to fp32 (the blend's input)", lambda: dec.float()),
        ("crop into bf16 (the blend's output)", lambda: out.copy_(cur[..., :192, :192])),
    ]
    gb = dec.numel() * 2 / 1e9
    print(f"cp_magi_tile_vae_decode steps, {n} tiles 3x3x32x32 -> 3x12x256x256 ({gb:.2f} GB in bf16), "
          f"{torch.cuda.get_device_name()}\n")
    print_steps(steps)


if __name__ == "__main__":
    main()
