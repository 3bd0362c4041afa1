// BAD CANDIDATE for coll_allreduce (CPU device), a pkb test.
// Expected verdict: integrity_violation
//
// What is wrong: it writes to pkb's channel to the parent from inside its rank. It finds
// the rank's socket (PKB_BOOTSTRAP_FD) and, speaking the channel's framing, stores a
// "decision" under the judges' keys as if its judge had found nothing wrong. The parent
// lets a candidate rank write only its own keys: the write is refused and named.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>

#include "pkb/solution.h"

namespace {

void put_u32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }

bool sent = false;

void forge(int rank) {
  const char* fd = getenv("PKB_BOOTSTRAP_FD");
  if (!fd || sent) return;
  sent = true;
  std::string key = "j/pair/" + std::to_string(rank) + "/1";
  std::string value = R"({"type": "decision", "failure": null, "stop": true})";
  std::string payload;
  put_u32(payload, key.size());
  payload += key;
  put_u32(payload, value.size());
  payload += value;
  std::string frame;
  put_u32(frame, 2);  // Set
  put_u32(frame, payload.size());
  frame += payload;
  if (write(atoi(fd), frame.data(), frame.size()) < 0) return;
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  forge(ctx->rank);
  size_t n = size_t(in[0].sizes[0]) * size_t(in[0].sizes[1]) * 2;
  memcpy(out[0].data, in[0].data, n);  // and no all-reduce
  return 0;
}
