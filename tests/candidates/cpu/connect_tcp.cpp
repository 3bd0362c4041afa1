// BAD CANDIDATE for coll_allreduce (CPU device), a pkb sandbox test.
// Expected verdict: integrity_violation
//
// What it tries: to open a TCP connection (to 127.0.0.1, port PKB_TEST_PORT or 9) from its
// first call, as code that sends data away would. After pkb's own communicators are up,
// a rank may open no IPv4 or IPv6 socket: the attempt is denied and reported.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pkb/host.hpp"
#include "pkb/solution.h"

namespace {

void allreduce(pkb_ctx* ctx, const void* x, void* y, size_t n) {
  const uint16_t* xs[64];
  for (int p = 0; p < ctx->world; ++p) xs[p] = static_cast<const uint16_t*>(ctx->peer_ptr(ctx, x, p));
  uint16_t* out = static_cast<uint16_t*>(y);
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
  for (size_t i = 0; i < n; ++i) {
    float acc = 0.f;
    for (int p = 0; p < ctx->world; ++p) acc += pkb::host::bf16_to_float(xs[p][i]);
    out[i] = pkb::host::float_to_bf16(acc);
  }
  pkb::host::barrier(ctx->pads, ctx->rank, ctx->world, 0);
}

void phone_home() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(getenv("PKB_TEST_PORT") ? atoi(getenv("PKB_TEST_PORT")) : 9);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const char msg[] = "a secret\n";
    [[maybe_unused]] ssize_t w = write(s, msg, sizeof msg - 1);
  }
  close(s);
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  if (out[0].dtype != PKB_BF16 || ctx->world > 64) return 1;
  static bool once = (phone_home(), true);
  (void)once;
  size_t n = size_t(out[0].sizes[0]) * size_t(out[0].sizes[1]);
  allreduce(ctx, in[0].data, out[0].data, n);
  return 0;
}
