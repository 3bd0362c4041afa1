// BAD CANDIDATE for coll_allreduce (CPU device), a pkb sandbox test: the first of a pair
// with replay_outputs.cpp.
// Expected verdict: correct
//
// Computes the all-reduce honestly, and after every call also stores its output in
// /dev/shm and /tmp, keyed by a hash of its input (folder pkb-store-<PKB_TEST_STORE>), for
// replay_outputs to find in a later evaluation with the same --seed, which draws the same
// inputs. Landlock lets a rank write only the evaluation's own scratch folder (removed
// afterwards), so nothing is stored; under --no-sandbox the replay that follows is correct
// without computing anything.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <string>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

uint64_t fnv1a(const void* data, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
  return h;
}

void store(const char* root, int rank, uint64_t key, const void* y, size_t bytes) {
  const char* tag = getenv("PKB_TEST_STORE");
  std::string dir = std::string(root) + "/pkb-store-" + (tag ? tag : "gallery");
  mkdir(dir.c_str(), 0700);
  char name[64];
  snprintf(name, sizeof name, "/r%d-%016llx.bin", rank, static_cast<unsigned long long>(key));
  if (FILE* f = fopen((dir + name).c_str(), "wb")) {
    fwrite(y, 1, bytes, f);
    fclose(f);
  }
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  const uint16_t* xs[64];
  for (int p = 0; p < ctx->world; ++p) xs[p] = static_cast<const uint16_t*>(ctx->peer_ptr(ctx, in[0].data, p));
  uint16_t* y = static_cast<uint16_t*>(out[0].data);
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  for (size_t i = 0; i < n; ++i) {
    float acc = 0.f;
    for (int p = 0; p < ctx->world; ++p) acc += pkb::host::bf16_to_float(xs[p][i]);
    y[i] = pkb::host::float_to_bf16(acc);
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  uint64_t key = fnv1a(in[0].data, n * sizeof(uint16_t));
  for (const char* root : {"/dev/shm", "/tmp"}) store(root, ctx->rank, key, y, n * sizeof(uint16_t));
  return 0;
}
