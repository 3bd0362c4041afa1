// OpenCLIP's SigLipLoss with bidirectional neighbour exchange: rank r's loss is the
// sigmoid loss of its image features against its own text features (+1 labels on the
// diagonal, -1 off it) plus, for every other rank's text features (received by
// neighbour exchange: (W-1)//2 bidirectional rounds, then one rightward round when W is
// even), the all-negative sigmoid loss; divided by the local batch.
// Origin: ParallelKernelBench 58_openclip_contrastive_loss (open_clip/loss.py).
// Deviations: clustered embeddings (hard negatives, so the other ranks' terms matter);
// logits (fp32 GEMM output) and sums in fp32, rounded to dt at the end.
#include <ATen/ATen.h>

#include <cmath>

#include "pkb/reference.hpp"

namespace {

struct SigLipLoss : pkb::Reference {
  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t b = ctx.size("Bl"), d = ctx.size("Dd"), k = 64;
    at::TensorOptions f32 = ctx.options(at::kFloat);
    auto unit = [](const at::Tensor& t) { return t / t.norm(2, -1, true); };
    at::Tensor centres = unit(at::randn({k, d}, ctx.shared_rng(), f32));
    at::Tensor cluster = at::randint(0, k, {b}, ctx.rng(), ctx.options(at::kLong));
    auto noise = [&](double std) { return at::randn({b, d}, ctx.rng(), f32).mul_(std / std::sqrt(double(d))); };
    at::Tensor latent = centres.index_select(0, cluster) + noise(0.5);
    at::Tensor image = unit(latent + noise(0.3));
    at::Tensor text = unit(latent + noise(0.3));
    in["image_features"] = image.to(ctx.dtype());
    in["text_features"] = text.to(ctx.dtype());
  }

  // sum of -log sigmoid(labels * logits) / Bl in fp32: labels +1 on the diagonal when
  // `positives`, -1 everywhere else. As -log sigmoid(x) = -log sigmoid(-x) - x, that is the
  // all-negative sum less the diagonal's logits: no labels matrix. The logits are an fp32
  // GEMM's: on CUDA the dt inputs go to cuBLAS as they are (fp32 accumulation and output;
  // their products are exact in fp32), on the CPU they are converted first.
  static at::Tensor siglip(const at::Tensor& image, const at::Tensor& text, double scale, double bias,
                           bool positives) {
    at::Tensor logits = image.is_cuda() ? at::mm(image, text.t(), at::kFloat)
                                        : at::mm(image.to(at::kFloat), text.to(at::kFloat).t());
    logits.mul_(-scale).sub_(bias);  // -logits
    at::Tensor loss = at::log_sigmoid(logits).sum().neg();
    if (positives) loss = loss + logits.diagonal().sum();  // - sum of the diagonal's logits
    return loss / double(image.size(0));
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    int r = ctx.rank(), w = ctx.world(), left = (r - 1 + w) % w, right = (r + 1) % w;
    double scale = ctx.arg_float("logit_scale"), bias = ctx.arg_float("logit_bias");
    const at::Tensor& image = in["image_features"];
    at::Tensor loss = siglip(image, in["text_features"], scale, bias, true);
    at::Tensor to_left = in["text_features"], to_right = in["text_features"];
    for (int round = 0; round < (w - 1) / 2; ++round) {
      at::Tensor from_left = at::empty_like(to_right), from_right = at::empty_like(to_left);
      std::vector<pkb::P2POp> ops{{pkb::P2POp::Send, to_right, right},
                                  {pkb::P2POp::Send, to_left, left},
                                  {pkb::P2POp::Recv, from_right, right},
                                  {pkb::P2POp::Recv, from_left, left}};
      comm.batch_p2p(ops);
      loss = loss + siglip(image, from_right, scale, bias, false) + siglip(image, from_left, scale, bias, false);
      to_left = from_right;
      to_right = from_left;
    }
    if ((w - 1) % 2) {
      at::Tensor received = at::empty_like(to_right);
      std::vector<pkb::P2POp> ops{{pkb::P2POp::Send, to_right, right}, {pkb::P2POp::Recv, received, left}};
      comm.batch_p2p(ops);
      loss = loss + siglip(image, received, scale, bias, false);
    }
    out["loss"].copy_(loss);  // rounded to dt as copied
  }
};

}  // namespace

PKB_REFERENCE("dp_siglip_contrastive_loss", SigLipLoss);
