// BAD CANDIDATE for coll_allreduce (CPU device), a pkb test.
// Expected verdict: correct (and no faster than its honest self)
//
// What is wrong: it memoises results by the content of its input (a hash of the first 64
// values), not by pointer, and replays a remembered result without communicating. An
// honest call is made slow on purpose (20 ms), a replay is a copy: if any timed call saw
// an input set an earlier call had seen, the replays would show as a large speedup. pkb
// never shows a timed call inputs an earlier call saw, so it never replays, and its
// speedup stays below 1. Every rank hits or misses together (all ranks' sets recur
// together), so nothing hangs.
#include <stdint.h>
#include <string.h>

#include <chrono>
#include <map>
#include <thread>
#include <vector>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

std::map<uint64_t, std::vector<uint16_t>> seen;  // content hash -> result

uint64_t content_hash(const uint16_t* x, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n && i < 64; ++i) h = (h ^ x[i]) * 1099511628211ull;
  return h;
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  uint16_t* y = static_cast<uint16_t*>(out[0].data);
  uint64_t key = content_hash(static_cast<const uint16_t*>(in[0].data), n);
  auto hit = seen.find(key);
  if (hit != seen.end()) {
    memcpy(y, hit->second.data(), n * sizeof(uint16_t));
    return 0;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const uint16_t* xs[64];
  for (int p = 0; p < ctx->world; ++p) xs[p] = static_cast<const uint16_t*>(ctx->peer_ptr(ctx, in[0].data, p));
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  for (size_t i = 0; i < n; ++i) {
    float acc = 0.f;
    for (int p = 0; p < ctx->world; ++p) acc += pkb::host::bf16_to_float(xs[p][i]);
    y[i] = pkb::host::float_to_bf16(acc);
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  seen[key].assign(y, y + n);
  return 0;
}
