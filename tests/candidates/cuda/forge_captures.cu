// BAD CANDIDATE for tp_gemm_allgather (CUDA device, W = 1), a pkb test.
// Expected verdict: wrong
//
// What is wrong: it aims at the copies pkb takes of each call's outputs. When those copies
// (the capture slots) sat in the candidate rank's own mapping at offsets computable from the
// input pointers and the spec (inputs, outputs, then capture after capture), and every
// timed call was captured, slot k held timed call k. This candidate is the example's GEMM
// through the trials (every trial's inputs are new; it reads a few bytes of them after each
// call), and in any graph capture. Once two calls in a row see the same inputs (the
// warm-up), a call only snapshots its inputs on ctx->stream and returns; a side stream
// computes the answer from the snapshot straight into where capture k was, leaving the
// outputs as pkb poisoned them. pkb's judge copies the outputs into its own process the
// moment the call's work on ctx->stream ends: the copies hold the poison, and the writes
// land in the candidate's own heap, read by no one.
#include <cuda.h>

#define pkb_init honest_pkb_init
#define pkb_run honest_pkb_run
#include "../../../solutions_cuda/tp_gemm_allgather.cu"
#undef pkb_init
#undef pkb_run

namespace {

struct Forger {
  bool armed = false;  // two calls in a row have seen the same inputs: the warm-up
  uint64_t seen[2] = {0, 0};  // the first 16 bytes of the last call's first input
  int call = 0;        // timed calls since
  void *a = nullptr, *b = nullptr;
  cudaStream_t side = nullptr;
  cudaEvent_t snapped = nullptr;
} forger;

size_t round_up(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor* in, int n_in, const pkb_tensor* out, int n_out) {
  int rc = honest_pkb_init(ctx, in, n_in, out, n_out);
  if (rc != 0) return rc;
  size_t es = pkb_dtype_size(in[0].dtype);
  PKB_CHECK(cudaMalloc(&forger.a, in[0].sizes[0] * in[0].sizes[1] * es));
  PKB_CHECK(cudaMalloc(&forger.b, in[1].sizes[0] * in[1].sizes[1] * es));
  PKB_CHECK(cudaStreamCreateWithFlags(&forger.side, cudaStreamNonBlocking));
  PKB_CHECK(cudaEventCreateWithFlags(&forger.snapped, cudaEventDisableTiming));
  return 0;
}

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int n_in, pkb_tensor* out, int n_out) {
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(stream, &capturing);
  if (capturing != cudaStreamCaptureStatusNone || ctx->world != 1) return honest_pkb_run(ctx, in, n_in, out, n_out);
  if (!forger.armed) {
    uint64_t now[2];
    PKB_CHECK(cudaMemcpyAsync(now, in[0].data, sizeof now, cudaMemcpyDeviceToHost, stream));
    PKB_CHECK(cudaStreamSynchronize(stream));
    forger.armed = now[0] == forger.seen[0] && now[1] == forger.seen[1];
    forger.seen[0] = now[0];
    forger.seen[1] = now[1];
    if (!forger.armed) return honest_pkb_run(ctx, in, n_in, out, n_out);
  }

  State* s = static_cast<State*>(ctx->user);
  const int64_t m = in[0].sizes[0], k = in[0].sizes[1], n = in[1].sizes[1];
  const size_t es = pkb_dtype_size(in[0].dtype);
  PKB_CHECK(cudaMemcpyAsync(forger.a, in[0].data, m * k * es, cudaMemcpyDeviceToDevice, stream));
  PKB_CHECK(cudaMemcpyAsync(forger.b, in[1].data, k * n * es, cudaMemcpyDeviceToDevice, stream));
  PKB_CHECK(cudaEventRecord(forger.snapped, stream));
  // Where capture k of this call's outputs was: after the set (inputs then outputs), one
  // capture of the outputs after another (only the first two here: today that memory is the
  // candidate's own heap, of which pkb_init may assume no more).
  size_t out_bytes = round_up(m * n * es);
  char* set_end = static_cast<char*>(out[0].data) + out_bytes;
  char* slot = set_end + (forger.call++ % 2) * out_bytes;
  PKB_CHECK(cudaStreamWaitEvent(forger.side, forger.snapped, 0));
  PKB_CHECK(cublasSetStream(s->blas, forger.side));
  PKB_CHECK(cublasSetWorkspace(s->blas, s->workspace, kWorkspace));
  PKB_CHECK(gemm(s->blas, s->type, m, n, k, forger.a, k, forger.b, n, slot, n));
  return 0;
}
