// Causal ring attention over the whole world with load-balanced (zig-zag) sharding: rank r
// holds q, k, v (B, S, H, D) for chunks r and 2W-1-r of the 2W chunks of a T-token
// sequence; K/V blocks travel around the ring (batch_p2p to rank+1, W-1 hops) while the
// current block is attended (fused scaled-dot-product attention that returns the
// log-sum-exp), and blocks merge by their log-sum-exp (fp32). Rank r returns
// softmax(q k^T / sqrt(D)) v under the causal mask for its queries, (B, S, H, D) in dt.
// Origin: ParallelKernelBench 54_ring_attention (zhuzilin's ring-flash-attention RingComm).
// Deviation: zig-zag sharding instead of contiguous blocks (every rank does the same work).
#include "cp_common.hpp"

namespace {

struct RingAttention : pkb::Reference {
  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& q = in["q"];
    double scale = 1.0 / std::sqrt(double(q.size(3)));
    pkb_cp::ring_attention_zigzag(ctx.comm(), q, in["k"], in["v"], scale, out["out"]);
  }
};

}  // namespace

PKB_REFERENCE("cp_ring_attention", RingAttention);
