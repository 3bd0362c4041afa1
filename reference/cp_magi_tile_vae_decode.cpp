// MAGI-1 tile-parallel VAE decode: the latent z (1, C, T, H, Wd), the same on every rank,
// is cut into overlapping tiles (Lt x Th x Tw latent cells, strides stt, sth, stw); tiles,
// sorted by size (largest first, ties by index), are dealt round-robin to the ranks. Each
// rank decodes its tiles (the stand-in decoder: trilinear upsampling by tu, su, su of the
// first 3 channels, fp32, rounded to dt), all ranks' decoded tiles are all-gathered, each
// rank blends its tiles with their decoded predecessors along t, then h, then w (linear
// ramps over the overlaps, fp32, rounded once) and crops them to the strides, the blended
// tiles are all-gathered and every rank assembles the video (1, 3, T*tu, H*su, Wd*su).
// Both gathers move tiles of different sizes: each rank packs its tiles into one buffer,
// padded to the largest rank's, whose sizes every rank knows from the tiling.
// Origin: ParallelKernelBench 78_magi1_tile_parallel_vae_decode.
// Deviations: z shared by all ranks (the original drew it per rank, so its tiles came from
// different latents); blends in fp32 with one rounding and as ramps, not per-row loops; dt
// instead of a fixed bf16; only the 3 channels the decoder keeps are upsampled.
#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>

#include "pkb/reference.hpp"

namespace {

struct Tile {
  int64_t t0, h0, w0, lt, lh, lw;  // latent origin and extent
  int64_t ti, hi, wi;              // grid index
};

struct MagiTileVaeDecode : pkb::Reference {
  std::vector<at::Tensor> run(pkb::Ctx& ctx, const pkb::Inputs& in) override {
    auto sz = [&](const char* n) { return ctx.size(n); };
    const at::Tensor& z = in["z"];
    int w = ctx.world(), me = ctx.rank();
    int64_t T = z.size(2), H = z.size(3), Wd = z.size(4);
    int64_t lt = sz("Lt"), th = sz("Th"), tw = sz("Tw"), stt = sz("stt"), sth = sz("sth"), stw = sz("stw");
    int64_t tu = sz("tu"), su = sz("su");
    int64_t nt = (T + stt - 1) / stt, nh = (H + sth - 1) / sth, nw = (Wd + stw - 1) / stw;
    std::vector<Tile> tiles;
    for (int64_t a = 0; a < nt; ++a)
      for (int64_t b = 0; b < nh; ++b)
        for (int64_t c = 0; c < nw; ++c)
          tiles.push_back({a * stt, b * sth, c * stw, std::min(lt, T - a * stt), std::min(th, H - b * sth),
                           std::min(tw, Wd - c * stw), a, b, c});
    auto index = [&](int64_t a, int64_t b, int64_t c) { return size_t((a * nh + b) * nw + c); };

    // Deal the tiles: sorted by size, largest first (stable), round-robin.
    std::vector<size_t> sorted(tiles.size());
    std::iota(sorted.begin(), sorted.end(), 0);
    std::stable_sort(sorted.begin(), sorted.end(), [&](size_t x, size_t y) {
      return tiles[x].lt * tiles[x].lh * tiles[x].lw > tiles[y].lt * tiles[y].lh * tiles[y].lw;
    });
    std::vector<std::vector<size_t>> owned(w);
    for (size_t i = 0; i < sorted.size(); ++i) owned[i % w].push_back(sorted[i]);

    at::ScalarType dt = z.scalar_type();
    auto decode = [&](const Tile& t) {
      at::Tensor lat = z.narrow(1, 0, 3).narrow(2, t.t0, t.lt).narrow(3, t.h0, t.lh).narrow(4, t.w0, t.lw);
      return at::upsample_trilinear3d(lat.to(at::kFloat), {t.lt * tu, t.lh * su, t.lw * su}, false, double(tu),
                                      double(su), double(su))
          .to(dt);
    };
    std::vector<std::vector<int64_t>> dec_shape(tiles.size()), out_shape(tiles.size());
    int64_t kt = stt * tu, kh = sth * su, kw = stw * su;
    for (size_t i = 0; i < tiles.size(); ++i) {
      const Tile& t = tiles[i];
      dec_shape[i] = {1, 3, t.lt * tu, t.lh * su, t.lw * su};
      out_shape[i] = {1, 3, std::min(kt, t.lt * tu), std::min(kh, t.lh * su), std::min(kw, t.lw * su)};
    }

    std::vector<at::Tensor> decoded(tiles.size());
    std::vector<at::Tensor> mine;
    for (size_t i : owned[me]) mine.push_back(decoded[i] = decode(tiles[i]));
    gather(ctx, owned, dec_shape, mine, decoded, z.options());

    // Blend with the decoded (unblended) predecessors; ramps r = j/extent over the overlap.
    int64_t bt = (lt - stt) * tu, bh = (th - sth) * su, bw = (tw - stw) * su;
    auto blend = [&](at::Tensor& cur, const at::Tensor& prev, int64_t dim, int64_t extent) {
      int64_t e = std::min({prev.size(dim), cur.size(dim), extent});
      if (e <= 0) return;
      std::vector<int64_t> shape(5, 1);
      shape[dim] = e;
      at::Tensor r = at::arange(e, cur.options()).div_(double(e)).view(shape);
      at::Tensor head = cur.narrow(dim, 0, e);
      head.copy_(prev.narrow(dim, prev.size(dim) - e, e).to(at::kFloat) * (1.0 - r) + head * r);
    };
    std::vector<at::Tensor> blended(tiles.size()), mine_b;
    for (size_t i : owned[me]) {
      const Tile& t = tiles[i];
      at::Tensor cur = decoded[i].to(at::kFloat);
      if (t.ti > 0) blend(cur, decoded[index(t.ti - 1, t.hi, t.wi)], 2, bt);
      if (t.hi > 0) blend(cur, decoded[index(t.ti, t.hi - 1, t.wi)], 3, bh);
      if (t.wi > 0) blend(cur, decoded[index(t.ti, t.hi, t.wi - 1)], 4, bw);
      const auto& s = out_shape[i];
      mine_b.push_back(blended[i] = cur.narrow(2, 0, s[2]).narrow(3, 0, s[3]).narrow(4, 0, s[4]).to(dt));
    }
    gather(ctx, owned, out_shape, mine_b, blended, z.options());

    at::Tensor video = at::empty({1, 3, T * tu, H * su, Wd * su}, z.options());
    for (size_t i = 0; i < tiles.size(); ++i)
      video.narrow(2, tiles[i].ti * kt, out_shape[i][2])
          .narrow(3, tiles[i].hi * kh, out_shape[i][3])
          .narrow(4, tiles[i].wi * kw, out_shape[i][4])
          .copy_(blended[i]);
    return {video};
  }

  // Variable-size all-gather of every rank's tiles (in its dealing order) into `all`.
  static void gather(pkb::Ctx& ctx, const std::vector<std::vector<size_t>>& owned,
                     const std::vector<std::vector<int64_t>>& shapes, const std::vector<at::Tensor>& mine,
                     std::vector<at::Tensor>& all, const at::TensorOptions& opts) {
    auto numel = [&](size_t i) {
      int64_t n = 1;
      for (int64_t d : shapes[i]) n *= d;
      return n;
    };
    std::vector<int64_t> total(owned.size(), 0);
    for (size_t r = 0; r < owned.size(); ++r)
      for (size_t i : owned[r]) total[r] += numel(i);
    int64_t most = *std::max_element(total.begin(), total.end());
    at::Tensor buf = at::zeros({most}, opts);
    int64_t off = 0;
    for (const at::Tensor& t : mine) {
      buf.narrow(0, off, t.numel()).copy_(t.reshape({-1}));
      off += t.numel();
    }
    at::Tensor got = ctx.comm().all_gather(buf);  // (W * most)
    for (size_t r = 0; r < owned.size(); ++r) {
      if (int(r) == ctx.rank()) continue;
      int64_t o = int64_t(r) * most;
      for (size_t i : owned[r]) {
        all[i] = got.narrow(0, o, numel(i)).view(shapes[i]);
        o += numel(i);
      }
    }
  }
};

}  // namespace

PKB_REFERENCE("cp_magi_tile_vae_decode", MagiTileVaeDecode);
