// torchrec's KJTAllToAll: rank r's KeyedJaggedTensor (F features x B samples) is split by
// feature, ks_d = 1 + d % 3 features per destination rank d; one all-to-all carries the
// split metadata, two more the lengths and the values; rank r reorders what it got from
// (source, feature, sample) to (feature, source, sample) (torchrec's recat).
// Origin: ParallelKernelBench 70_torchrec_kjt_all2all.
// Deviations: lengths with per-feature pooling factors and a long tail; values in a
// fixed-capacity buffer.
#include "sparse_inputs.hpp"

namespace {

int64_t key_split(int64_t kf, int64_t d) { return kf * (1 + d % 3); }

struct KjtAllToAll : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t f = ctx.size("F"), b = ctx.size("B"), cap = b * ctx.size("VAVG");
    at::TensorOptions f64 = ctx.options(at::kDouble);
    double lo = std::log(ctx.arg_float("mean_min")), hi = std::log(ctx.arg_float("mean_max"));
    int64_t longest = ctx.arg_int("max_length");
    at::Tensor mu = at::exp(at::rand({f, 1}, ctx.shared_rng(), f64) * (hi - lo) + lo);  // per feature
    at::Tensor lengths = at::empty({f, b}, ctx.options(at::kLong));
    for (int attempt = 0;; ++attempt) {
      // floor(mu * Exp(1)), Exp(1) = -log(U), capped; features whose total would overflow
      // their B * VAVG share of the values buffer are drawn again.
      at::Tensor u = at::rand({f, b}, ctx.rng(), f64).clamp_min(1e-300);
      at::Tensor draw = (-u.log() * mu).floor().clamp_max(double(longest)).to(at::kLong);
      at::Tensor redo = attempt == 0 ? at::ones({f}, ctx.options(at::kBool)) : lengths.sum(1) > cap;
      lengths = at::where(redo.unsqueeze(1), draw, lengths);
      if (!(lengths.sum(1) > cap).any().item<bool>()) break;
      if (attempt == 100) throw std::runtime_error("rec_torchrec_kjt_all2all: lengths overflow the values buffer");
    }
    in["lengths"] = lengths.view({-1});
    in["values"] = at::randint(0, 1000000, {ctx.size("VCAP")}, ctx.rng(), ctx.options(at::kLong));
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    int64_t w = ctx.world(), r = ctx.rank(), kf = ctx.size("KF"), b = ctx.size("B"), ks = key_split(kf, r);
    const at::Tensor& lengths = in["lengths"];
    int64_t f = lengths.numel() / b;
    // Metadata per destination d: its lengths (ks_d * B), its values, the batch size.
    at::Tensor per_feature = lengths.view({f, b}).sum(1).cpu();
    std::vector<int64_t> meta;
    std::vector<int64_t> len_send, val_send;
    int64_t feat = 0;
    for (int64_t d = 0; d < w; ++d) {
      int64_t k = key_split(kf, d);
      len_send.push_back(k * b);
      val_send.push_back(per_feature.narrow(0, feat, k).sum().item<int64_t>());
      feat += k;
      meta.insert(meta.end(), {len_send.back(), val_send.back(), b});
    }
    at::Tensor meta_in = at::tensor(meta, at::kLong).to(ctx.device()).view({w, 3});
    at::Tensor meta_out = at::zeros_like(meta_in);
    comm.all_to_all(meta_out, meta_in);
    at::Tensor got = meta_out.cpu();
    // Every source sends ks_r * B lengths (B is the same everywhere); the metadata's own
    // count only confirms it.
    std::vector<int64_t> len_recv(w, ks * b);
    std::vector<int64_t> val_recv = pkb_sparse::to_vector(got.select(1, 1));
    at::Tensor& stride_per_rank = out["stride_per_rank"].copy_(got.select(1, 2));

    at::Tensor recv_lengths = pkb_sparse::all_to_all_rows(comm, lengths, len_send, len_recv);
    int64_t used = pkb_sparse::sum(val_send);
    at::Tensor recv_values = pkb_sparse::all_to_all_rows(comm, in["values"].narrow(0, 0, used), val_send, val_recv);

    // recat: segments (source s, feature k) of B lengths each -> order (k, s).
    at::Tensor seg_len = recv_lengths.view({w * ks, b}).sum(1);  // values per (s, k)
    at::Tensor seg_start = seg_len.cumsum(0) - seg_len;
    at::Tensor order = at::arange(w * ks, ctx.options(at::kLong)).view({w, ks}).t().reshape({-1});
    auto [seg, pos] = pkb_sparse::segments(seg_len.index_select(0, order));
    at::Tensor gather = seg_start.index_select(0, order).index_select(0, seg) + pos;
    out.set_size(1, 0, gather.numel());
    at::Tensor out_values = out["recv_values"].narrow(0, 0, gather.numel());
    at::index_select_out(out_values, recv_values, 0, gather);
    out["recv_lengths"].view({ks, w, b}).copy_(recv_lengths.view({w, ks, b}).transpose(0, 1));
    at::sum_out(out["stride"], stride_per_rank);
  }
};

}  // namespace

PKB_REFERENCE("rec_torchrec_kjt_all2all", KjtAllToAll);
