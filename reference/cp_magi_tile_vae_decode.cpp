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
// instead of a fixed bf16; only the 3 channels the decoder keeps are upsampled; tiles of
// one shape decoded, blended and placed in batches, not one at a time (the same arithmetic
// on every element: the original's loop made hundreds of small launches a call).
#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <stdexcept>

#include "pkb/reference.hpp"

namespace {

// One axis of the tiling (t, h or w): tiles of `tile` latent cells every `stride` cells
// over `len`, upsampled by `up`.
struct Axis {
  int64_t len, tile, stride, up;
  int64_t count() const { return (len + stride - 1) / stride; }
  int64_t extent(int64_t i) const { return std::min(tile, len - i * stride); }  // latent cells of tile i
  int64_t kept() const { return stride * up; }                                   // decoded length a tile keeps
  int64_t crop(int64_t i) const { return std::min(kept(), extent(i) * up); }
  int64_t ramp() const { return (tile - stride) * up; }  // the blend's width
};

using Ext = std::array<int64_t, 3>;  // per axis (t, h, w)

// The tiles of one decoded shape. They form a block of the grid (along an axis the tiles of
// full extent come first, then each shorter one alone), and every rank keeps its decoded and
// blended tiles of the shape as consecutive rows, ordered by cell.
struct Shape {
  Ext extent{}, first{}, count{};         // latent extent; the block's grid origin and size
  std::vector<std::vector<size_t>> rows;  // per rank: its tiles, as rows of the gathered tensors
  std::vector<int64_t> rank_row;          // per rank: its first row in the gathered tensors
  at::Tensor own_latents;                 // this rank's tiles as indices into the block (grid order)
  at::Tensor grid_rows;                   // the block's tiles in grid order, as rows
};

// The tiles of one shape that blend alike: the same predecessors' extents (0: none).
struct Cell {
  size_t shape = 0;
  Ext pred_extent{};
  std::array<size_t, 3> pred_shape{};
  std::vector<int64_t> begin, size;         // per rank: its rows of the shape (from its first)
  std::array<at::Tensor, 3> pred_rows;      // this rank's tiles' predecessors, rows of pred_shape
  std::array<at::Tensor, 3> ramp, rest;     // r = j / e over the overlap and 1 - r, fp32
};

struct Tiling {
  std::array<Axis, 3> ax;
  std::vector<Shape> shapes;
  std::vector<Cell> cells;
  int64_t decoded_max = 0, blended_max = 0;  // the gathers' buffers: the largest rank's elements
  std::vector<std::vector<int64_t>> decoded_at, blended_at;  // [rank][shape]: where its rows start

  int64_t decoded_numel(const Shape& s) const { return 3 * s.extent[0] * ax[0].up * s.extent[1] * ax[1].up * s.extent[2] * ax[2].up; }
  Ext decoded(const Shape& s) const { return {s.extent[0] * ax[0].up, s.extent[1] * ax[1].up, s.extent[2] * ax[2].up}; }
  Ext cropped(const Shape& s) const {
    Ext c;
    for (int d = 0; d < 3; ++d) c[d] = std::min(ax[d].kept(), s.extent[d] * ax[d].up);
    return c;
  }

  explicit Tiling(pkb::Ctx& ctx) {
    auto sz = [&](const char* n) { return ctx.size(n); };
    ax = {Axis{sz("T"), sz("Lt"), sz("stt"), sz("tu")}, Axis{sz("H"), sz("Th"), sz("sth"), sz("su")},
          Axis{sz("Wd"), sz("Tw"), sz("stw"), sz("su")}};
    int w = ctx.world(), me = ctx.rank();
    Ext n = {ax[0].count(), ax[1].count(), ax[2].count()};
    int64_t tiles = n[0] * n[1] * n[2];
    auto grid = [&](int64_t i) { return Ext{i / (n[1] * n[2]), i / n[2] % n[1], i % n[2]}; };
    auto extent = [&](const Ext& g) { return Ext{ax[0].extent(g[0]), ax[1].extent(g[1]), ax[2].extent(g[2])}; };
    auto volume = [](const Ext& e) { return e[0] * e[1] * e[2]; };

    // Deal the tiles: sorted by size, largest first (stable), round-robin.
    std::vector<int64_t> sorted(tiles), owner(tiles);
    std::iota(sorted.begin(), sorted.end(), 0);
    std::stable_sort(sorted.begin(), sorted.end(),
                     [&](int64_t x, int64_t y) { return volume(extent(grid(x))) > volume(extent(grid(y))); });
    for (int64_t i = 0; i < tiles; ++i) owner[sorted[i]] = i % w;

    // Shapes and cells, in order of first appearance.
    std::map<Ext, size_t> shape_of;
    std::map<std::pair<size_t, Ext>, size_t> cell_of;
    std::vector<size_t> tile_shape(tiles), tile_cell(tiles);
    for (int64_t i = 0; i < tiles; ++i) {
      Ext g = grid(i), e = extent(g), p{};
      for (int d = 0; d < 3; ++d)
        if (g[d] > 0) p[d] = ax[d].extent(g[d] - 1);
      auto [s, new_shape] = shape_of.emplace(e, shapes.size());
      if (new_shape) shapes.push_back(Shape{e, g, {}, std::vector<std::vector<size_t>>(w), {}, {}, {}});
      auto [c, new_cell] = cell_of.emplace(std::make_pair(s->second, p), cells.size());
      if (new_cell) cells.push_back(Cell{s->second, p, {}, std::vector<int64_t>(w, 0), std::vector<int64_t>(w, 0), {}, {}, {}});
      tile_shape[i] = s->second;
      tile_cell[i] = c->second;
    }
    // Every rank's tiles of a shape, ordered by cell (then index): a cell's are consecutive.
    for (int64_t i = 0; i < tiles; ++i) shapes[tile_shape[i]].rows[owner[i]].push_back(size_t(i));
    std::vector<int64_t> row(tiles);
    for (size_t si = 0; si < shapes.size(); ++si) {
      Shape& s = shapes[si];
      int64_t at = 0;
      for (int r = 0; r < w; ++r) {
        std::stable_sort(s.rows[r].begin(), s.rows[r].end(), [&](size_t x, size_t y) { return tile_cell[x] < tile_cell[y]; });
        s.rank_row.push_back(at);
        for (size_t k = 0; k < s.rows[r].size(); ++k) {
          size_t i = s.rows[r][k];
          row[i] = at + int64_t(k);
          Cell& c = cells[tile_cell[i]];
          if (c.size[r]++ == 0) c.begin[r] = int64_t(k);
        }
        at += int64_t(s.rows[r].size());
      }
    }

    // Each shape's block, checked: the assembly places it as one strided copy.
    std::vector<Ext> last(shapes.size(), Ext{-1, -1, -1});
    std::vector<int64_t> members(shapes.size(), 0);
    for (int64_t i = 0; i < tiles; ++i) {
      Ext g = grid(i);
      size_t si = tile_shape[i];
      for (int d = 0; d < 3; ++d) last[si][d] = std::max(last[si][d], g[d]);
      ++members[si];
    }
    at::TensorOptions idx = at::TensorOptions().dtype(at::kLong);
    for (size_t si = 0; si < shapes.size(); ++si) {
      Shape& s = shapes[si];
      for (int d = 0; d < 3; ++d) {
        s.count[d] = last[si][d] - s.first[d] + 1;
        if (s.count[d] > 1 && ax[d].crop(s.first[d]) != ax[d].kept())
          throw std::logic_error("cp_magi_tile_vae_decode: a block of tiles cropped short");
      }
      if (volume(s.count) != members[si]) throw std::logic_error("cp_magi_tile_vae_decode: tiles of one shape not a block");
      std::vector<int64_t> own, grid_rows;
      auto in_block = [&](int64_t i) {
        Ext g = grid(i);
        return ((g[0] - s.first[0]) * s.count[1] + g[1] - s.first[1]) * s.count[2] + g[2] - s.first[2];
      };
      for (size_t i : s.rows[me]) own.push_back(in_block(int64_t(i)));
      grid_rows.resize(size_t(members[si]));
      for (int64_t i = 0; i < tiles; ++i)
        if (tile_shape[i] == si) grid_rows[size_t(in_block(i))] = row[i];
      s.own_latents = at::tensor(own, idx).to(ctx.device());
      s.grid_rows = at::tensor(grid_rows, idx).to(ctx.device());
    }

    // Each cell's predecessors (rows of the predecessor's shape) and ramps, for this rank.
    at::TensorOptions f32 = at::TensorOptions().dtype(at::kFloat).device(ctx.device());
    for (size_t ci = 0; ci < cells.size(); ++ci) {
      Cell& c = cells[ci];
      const Shape& s = shapes[c.shape];
      for (int d = 0; d < 3; ++d) {
        if (!c.pred_extent[d]) continue;
        Ext e = s.extent;
        e[d] = c.pred_extent[d];
        c.pred_shape[d] = shape_of.at(e);
        std::vector<int64_t> pred;
        for (size_t i : s.rows[me])
          if (tile_cell[i] == ci) {
            Ext g = grid(int64_t(i));
            --g[d];
            pred.push_back(row[(g[0] * n[1] + g[1]) * n[2] + g[2]]);
          }
        c.pred_rows[d] = at::tensor(pred, idx).to(ctx.device());
        int64_t width = std::min({c.pred_extent[d] * ax[d].up, s.extent[d] * ax[d].up, ax[d].ramp()});
        if (width <= 0) continue;
        std::vector<int64_t> view(5, 1);
        view[2 + d] = width;
        c.ramp[d] = at::arange(width, f32).div_(double(width)).view(view);
        c.rest[d] = 1.0 - c.ramp[d];
      }
    }

    // The gathers' layouts: each rank's rows shape by shape.
    decoded_at.assign(w, std::vector<int64_t>(shapes.size()));
    blended_at.assign(w, std::vector<int64_t>(shapes.size()));
    for (int r = 0; r < w; ++r) {
      int64_t dec = 0, bl = 0;
      for (size_t si = 0; si < shapes.size(); ++si) {
        int64_t rows_r = int64_t(shapes[si].rows[r].size());
        Ext c = cropped(shapes[si]);
        decoded_at[r][si] = dec;
        blended_at[r][si] = bl;
        dec += rows_r * decoded_numel(shapes[si]);
        bl += rows_r * 3 * c[0] * c[1] * c[2];
      }
      decoded_max = std::max(decoded_max, dec);
      blended_max = std::max(blended_max, bl);
    }
  }
};

struct MagiTileVaeDecode : pkb::Reference {
  std::unique_ptr<Tiling> tiling;
  void setup(pkb::Ctx& ctx) override { tiling = std::make_unique<Tiling>(ctx); }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const Tiling& tl = *tiling;
    const at::Tensor& z = in["z"];
    int me = ctx.rank();
    const auto& ax = tl.ax;

    // Decode this rank's tiles, shape by shape, into the first gather's buffer: the latent
    // block as windows, this rank's rows of it, upsampled in fp32 and rounded to dt (as
    // ATen's reduced-precision upsampling computes).
    at::Tensor sent = at::empty({tl.decoded_max}, z.options());
    int64_t used = 0;
    for (size_t si = 0; si < tl.shapes.size(); ++si) {
      const Shape& s = tl.shapes[si];
      int64_t n = int64_t(s.rows[me].size());
      if (!n) continue;
      at::Tensor block = z.narrow(1, 0, 3);
      for (int d = 0; d < 3; ++d)
        block = block.narrow(2 + d, s.first[d] * ax[d].stride, (s.count[d] - 1) * ax[d].stride + s.extent[d]);
      for (int d = 0; d < 3; ++d) block = block.unfold(2 + d, s.extent[d], ax[d].stride);  // (1, 3, nt, nh, nw, lt, lh, lw)
      at::Tensor lat = block.permute({2, 3, 4, 0, 1, 5, 6, 7})
                           .reshape({-1, 3, s.extent[0], s.extent[1], s.extent[2]})
                           .index_select(0, s.own_latents);
      Ext o = tl.decoded(s);
      at::Tensor res = sent.narrow(0, tl.decoded_at[me][si], n * tl.decoded_numel(s)).view({n, 3, o[0], o[1], o[2]});
      at::upsample_trilinear3d_out(res, lat, {o[0], o[1], o[2]}, false, double(ax[0].up), double(ax[1].up),
                                   double(ax[2].up));
      used += n * tl.decoded_numel(s);
    }
    if (used < tl.decoded_max) sent.narrow(0, used, tl.decoded_max - used).zero_();
    std::vector<at::Tensor> decoded = by_shape(ctx, sent, tl.decoded_at, [&](const Shape& s) { return tl.decoded(s); });

    // Blend this rank's tiles, cell by cell, with their decoded (unblended) predecessors:
    // cur[j] = prev[len-e+j] (1 - r) + cur[j] r over the overlap, in fp32, then crop them,
    // rounded once, into the second gather's buffer.
    at::Tensor blended = at::empty({tl.blended_max}, z.options());
    used = 0;
    std::vector<int64_t> filled(tl.shapes.size(), 0);
    for (const Cell& c : tl.cells) {
      int64_t n = c.size[me];
      if (!n) continue;
      const Shape& s = tl.shapes[c.shape];
      at::Tensor cur = decoded[c.shape].narrow(0, s.rank_row[me] + c.begin[me], n).to(at::kFloat, false, /*copy=*/true);
      for (int d = 0; d < 3; ++d) {
        if (!c.ramp[d].defined()) continue;
        int64_t e = c.ramp[d].size(2 + d), len = c.pred_extent[d] * ax[d].up;
        at::Tensor prev = decoded[c.pred_shape[d]].narrow(2 + d, len - e, e).index_select(0, c.pred_rows[d]);
        cur.narrow(2 + d, 0, e).mul_(c.ramp[d]).add_(prev * c.rest[d]);
      }
      Ext k = tl.cropped(s);
      int64_t numel = 3 * k[0] * k[1] * k[2];
      at::Tensor dst = blended.narrow(0, tl.blended_at[me][c.shape] + c.begin[me] * numel, n * numel);
      dst.view({n, 3, k[0], k[1], k[2]}).copy_(cur.narrow(2, 0, k[0]).narrow(3, 0, k[1]).narrow(4, 0, k[2]));
      used += n * numel;
    }
    if (used < tl.blended_max) blended.narrow(0, used, tl.blended_max - used).zero_();
    std::vector<at::Tensor> tiles = by_shape(ctx, blended, tl.blended_at, [&](const Shape& s) { return tl.cropped(s); });

    // Assemble: each shape's block of tiles is one strided region of the video.
    at::Tensor& video = out["video"];  // (1, 3, T*tu, H*su, Wd*su), every element in one region
    for (size_t si = 0; si < tl.shapes.size(); ++si) {
      const Shape& s = tl.shapes[si];
      Ext k = tl.cropped(s);
      at::Tensor region = video.select(0, 0);
      for (int d = 0; d < 3; ++d) region = region.narrow(1 + d, s.first[d] * ax[d].kept(), s.count[d] * k[d]);
      region.view({3, s.count[0], k[0], s.count[1], k[1], s.count[2], k[2]})
          .permute({1, 3, 5, 0, 2, 4, 6})
          .copy_(tiles[si].index_select(0, s.grid_rows).view({s.count[0], s.count[1], s.count[2], 3, k[0], k[1], k[2]}));
    }
  }

  // All-gathers every rank's packed buffer and returns, per shape, all ranks' tiles of it as
  // one (rows, 3, a, b, c) tensor, rank by rank (a view where there is one rank).
  template <class Dims>
  std::vector<at::Tensor> by_shape(pkb::Ctx& ctx, const at::Tensor& mine, const std::vector<std::vector<int64_t>>& at,
                                   Dims dims) const {
    const Tiling& tl = *tiling;
    at::Tensor got = ctx.comm().all_gather(mine);  // (W * max)
    int64_t most = mine.numel();
    std::vector<at::Tensor> out;
    for (size_t si = 0; si < tl.shapes.size(); ++si) {
      const Shape& s = tl.shapes[si];
      Ext e = dims(s);
      std::vector<at::Tensor> parts;
      for (int r = 0; r < ctx.world(); ++r) {
        int64_t n = int64_t(s.rows[r].size());
        if (n) parts.push_back(got.narrow(0, r * most + at[r][si], n * 3 * e[0] * e[1] * e[2]).view({n, 3, e[0], e[1], e[2]}));
      }
      out.push_back(parts.size() == 1 ? parts[0] : at::cat(parts, 0));
    }
    return out;
  }
};

}  // namespace

PKB_REFERENCE("cp_magi_tile_vae_decode", MagiTileVaeDecode);
