// BAD CANDIDATE for coll_allreduce (CPU device), a pkb sandbox test: the second of a pair
// with store_outputs.cpp.
// Expected verdict: wrong (nothing stored to replay)
//
// Computes nothing: hashes its input and copies the output an earlier evaluation stored
// under that hash in /dev/shm or /tmp (folder pkb-store-<PKB_TEST_STORE>). Evaluated after
// store_outputs with the same --seed it would be correct, and fast, if anything a
// candidate writes outlived its evaluation (as under --no-sandbox); in the sandbox nothing
// was stored, its outputs stay as pkb poisoned them, and it is wrong.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string>

#include "pkb/solution.h"

namespace {

uint64_t fnv1a(const void* data, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 1099511628211ull;
  return h;
}

bool replay(const char* root, int rank, uint64_t key, void* y, size_t bytes) {
  const char* tag = getenv("PKB_TEST_STORE");
  char name[64];
  snprintf(name, sizeof name, "/r%d-%016llx.bin", rank, static_cast<unsigned long long>(key));
  std::string path = std::string(root) + "/pkb-store-" + (tag ? tag : "gallery") + name;
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) return false;
  size_t got = fread(y, 1, bytes, f);
  fclose(f);
  return got == bytes;
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16) return 1;
  size_t bytes = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]) * sizeof(uint16_t);
  uint64_t key = fnv1a(in[0].data, bytes);
  for (const char* root : {"/dev/shm", "/tmp"})
    if (replay(root, ctx->rank, key, out[0].data, bytes)) break;
  return 0;
}
