// tp_allgather_gemm on CUDA, no NCCL: rank r holds the K-slice a = A_r (M, Kl) of the
// activations and its weight b = B_r (K, N); it returns c = A @ B_r (M, N), where
// A = cat(A_0, ..., A_{W-1}) along dim 1.
//
// Algorithm: gather A in row chunks and multiply each chunk once it has landed. A side stream
// copies rows [i0, i1) of every rank's slice straight from the symmetric heap (copy engines,
// over NVLink) into a local (M, K) buffer while cuBLAS on ctx->stream multiplies the chunk
// before: c[i0:i1] = A[i0:i1] @ B_r, one GEMM per chunk with fp32 accumulation, rounded once as
// in the reference. The copy engines move data without taking SMs from the GEMM, so only the
// first chunk's copy is exposed. Each rank receives the W-1 other slices, the all-gather
// minimum.
//
// A call is barrier, pipeline, barrier, all joined on ctx->stream. After the first barrier
// every rank's a is ready; after the second nobody reads my a any more, so pkb may refill it.
// The barrier is a one-block kernel on channel 0 of the signal pads and nothing else ever
// spins, so ranks sharing a GPU always make progress. At W=1 the call is one GEMM.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>
#include <string>

#include "pkb/device.cuh"
#include "pkb/solution.h"

namespace {

constexpr int kChannel = 0;                      // our barrier's signal-pad channel (pkb keeps the last one)
constexpr int kChunks = 4;                       // row chunks of the pipeline
constexpr size_t kWorkspace = size_t{32} << 20;  // cuBLAS workspace, its recommendation for Hopper

// What pkb_init makes and pkb_run reuses.
struct State {
  cudaDataType type = CUDA_R_16BF;
  cublasHandle_t blas = nullptr;
  void* workspace = nullptr;
  void* gathered = nullptr;        // A (M, K), gathered here chunk by chunk
  cudaStream_t copies = nullptr;   // the gather's stream, forked from ctx->stream every call
  cudaEvent_t fork = nullptr;      // ctx->stream has passed the first barrier
  cudaEvent_t landed = nullptr;    // the chunk's copies are done

  ~State() {
    cudaDeviceSynchronize();  // nothing in flight may still use what we free
    if (blas) cublasDestroy(blas);
    cudaFree(workspace);
    cudaFree(gathered);
    if (fork) cudaEventDestroy(fork);
    if (landed) cudaEventDestroy(landed);
    if (copies) cudaStreamDestroy(copies);
  }
};

// The cuBLAS type of a pkb dtype; false for dtypes this candidate does not handle.
bool blas_type(int dtype, cudaDataType* type) {
  switch (dtype) {
    case PKB_BF16: *type = CUDA_R_16BF; return true;
    case PKB_FP16: *type = CUDA_R_16F; return true;
    case PKB_FP32: *type = CUDA_R_32F; return true;
    default: return false;
  }
}

// Row-major C (m, n) = A (m, k) @ B (k, n), each with its own row pitch (ld*), all of `type`,
// accumulated in fp32. cuBLAS is column-major, so it computes C^T = B^T A^T.
cublasStatus_t gemm(cublasHandle_t h, cudaDataType type, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                    const void* b, int64_t ldb, void* c, int64_t ldc) {
  const float one = 1.f, zero = 0.f;
  return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, int(n), int(m), int(k), &one, b, type, int(ldb), a, type, int(lda),
                      &zero, c, type, int(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor* in, int, const pkb_tensor*, int) {
  State* s = new State;
  ctx->user = s;
  if (!blas_type(in[0].dtype, &s->type)) {
    ctx->set_error(ctx, "tp_allgather_gemm: needs bf16, fp16 or fp32");
    return 1;
  }
  size_t m = in[0].sizes[0], k = in[1].sizes[0];
  PKB_CHECK(cublasCreate(&s->blas));
  PKB_CHECK(cublasSetMathMode(s->blas, cublasMath_t(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  PKB_CHECK(cudaMalloc(&s->workspace, kWorkspace));
  PKB_CHECK(cudaMalloc(&s->gathered, m * k * pkb_dtype_size(in[0].dtype)));
  PKB_CHECK(cudaStreamCreateWithFlags(&s->copies, cudaStreamNonBlocking));
  PKB_CHECK(cudaEventCreateWithFlags(&s->fork, cudaEventDisableTiming));
  PKB_CHECK(cudaEventCreateWithFlags(&s->landed, cudaEventDisableTiming));
  return 0;
}

PKB_EXPORT void pkb_finalize(pkb_ctx* ctx) {
  delete static_cast<State*>(ctx->user);
  ctx->user = nullptr;
}

PKB_EXPORT int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
  State* s = static_cast<State*>(ctx->user);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
  const int rank = ctx->rank, world = ctx->world;
  const int64_t m = in[0].sizes[0], kl = in[0].sizes[1], k = in[1].sizes[0], n = in[1].sizes[1];
  const size_t es = pkb_dtype_size(in[0].dtype);
  const void* a = in[0].data;
  const void* b = in[1].data;
  char* c = static_cast<char*>(out[0].data);
  char* gathered = static_cast<char*>(s->gathered);

  PKB_CHECK(cublasSetStream(s->blas, stream));  // this resets the workspace, so set it after
  PKB_CHECK(cublasSetWorkspace(s->blas, s->workspace, kWorkspace));
  if (world == 1) {
    PKB_CHECK(gemm(s->blas, s->type, m, n, k, a, k, b, n, c, n));
    return 0;
  }

  pkb::dev::barrier(ctx, stream, kChannel);
  PKB_CHECK(cudaGetLastError());
  PKB_CHECK(cudaEventRecord(s->fork, stream));
  PKB_CHECK(cudaStreamWaitEvent(s->copies, s->fork, 0));
  const int64_t rows = (m + kChunks - 1) / kChunks;
  for (int64_t i0 = 0; i0 < m; i0 += rows) {
    const int64_t h = std::min(rows, m - i0);
    char* chunk = gathered + i0 * k * es;  // rows [i0, i0 + h) of A
    // Slice p of the chunk is its columns [p*Kl, (p+1)*Kl): from rank p's a, rows [i0, i0 + h).
    // Own slice first, then rank+1, ...: at any time each rank reads from a different peer.
    for (int j = 0; j < world; ++j) {
      int p = (rank + j) % world;
      const char* src = static_cast<const char*>(ctx->peer_ptr(ctx, a, p)) + i0 * kl * es;
      PKB_CHECK(cudaMemcpy2DAsync(chunk + p * kl * es, k * es, src, kl * es, kl * es, h, cudaMemcpyDeviceToDevice,
                              s->copies));
    }
    // The GEMM waits for its chunk only; the last wait also joins the copies back.
    PKB_CHECK(cudaEventRecord(s->landed, s->copies));
    PKB_CHECK(cudaStreamWaitEvent(stream, s->landed, 0));
    PKB_CHECK(gemm(s->blas, s->type, h, n, k, chunk, k, b, n, c + i0 * n * es, n));
  }
  pkb::dev::barrier(ctx, stream, kChannel);
  PKB_CHECK(cudaGetLastError());
  return 0;
}
