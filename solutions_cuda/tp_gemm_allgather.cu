// tp_gemm_allgather on CUDA, no NCCL: rank r computes C_r = a @ b = A_r @ B_r (M, Nl), and
// every rank returns c = cat(C_0, ..., C_{W-1}) along dim 1 (M, N).
//
// Algorithm: compute C_r in row chunks and push each chunk as soon as it is done. cuBLAS on
// ctx->stream writes rows [i0, i1) of C_r straight into column block r of the own c
// (ldc = N, fp32 accumulation, rounded once as in the reference); a side stream then copies
// that chunk into column block r of every peer's c through the symmetric heap (copy engines,
// over NVLink) while cuBLAS computes the next chunk. The copy engines move data without
// taking SMs from the GEMM, so only the last chunk's push is exposed. Each rank receives the
// W-1 other blocks, the all-gather minimum.
//
// A call is barrier, pipeline, barrier, all joined on ctx->stream. After the first barrier
// every peer's c is ready to be written (pkb poisons it before the call); after the second
// every block has landed in every c. Nobody reads a block before the call ends, so no
// per-chunk signal is needed. The barrier is a one-block kernel on channel 0 of the signal
// pads and nothing else ever spins, so ranks sharing a GPU always make progress. At W=1 the
// call is one GEMM.
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
  cudaStream_t pushes = nullptr;  // the pushes' stream, forked from ctx->stream every call
  cudaEvent_t computed = nullptr;  // the chunk's GEMM is done
  cudaEvent_t pushed = nullptr;    // every push is done

  ~State() {
    cudaDeviceSynchronize();  // nothing in flight may still use what we free
    if (blas) cublasDestroy(blas);
    cudaFree(workspace);
    if (computed) cudaEventDestroy(computed);
    if (pushed) cudaEventDestroy(pushed);
    if (pushes) cudaStreamDestroy(pushes);
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
    ctx->set_error(ctx, "tp_gemm_allgather: needs bf16, fp16 or fp32");
    return 1;
  }
  PKB_CHECK(cublasCreate(&s->blas));
  PKB_CHECK(cublasSetMathMode(s->blas, cublasMath_t(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  PKB_CHECK(cudaMalloc(&s->workspace, kWorkspace));
  PKB_CHECK(cudaStreamCreateWithFlags(&s->pushes, cudaStreamNonBlocking));
  PKB_CHECK(cudaEventCreateWithFlags(&s->computed, cudaEventDisableTiming));
  PKB_CHECK(cudaEventCreateWithFlags(&s->pushed, cudaEventDisableTiming));
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
  const int64_t m = in[0].sizes[0], k = in[0].sizes[1], nl = in[1].sizes[1], n = out[0].sizes[1];
  const size_t es = pkb_dtype_size(in[0].dtype);
  const char* a = static_cast<const char*>(in[0].data);
  const void* b = in[1].data;
  char* c = static_cast<char*>(out[0].data);

  PKB_CHECK(cublasSetStream(s->blas, stream));  // this resets the workspace, so set it after
  PKB_CHECK(cublasSetWorkspace(s->blas, s->workspace, kWorkspace));
  if (world == 1) {
    PKB_CHECK(gemm(s->blas, s->type, m, nl, k, a, k, b, nl, c, n));
    return 0;
  }

  pkb::dev::barrier(ctx, stream, kChannel);
  PKB_CHECK(cudaGetLastError());
  const int64_t rows = (m + kChunks - 1) / kChunks;
  for (int64_t i0 = 0; i0 < m; i0 += rows) {
    const int64_t h = std::min(rows, m - i0);
    char* chunk = c + (i0 * n + rank * nl) * es;  // rows [i0, i0 + h) of column block `rank`
    PKB_CHECK(gemm(s->blas, s->type, h, nl, k, a + i0 * k * es, k, b, nl, chunk, n));
    PKB_CHECK(cudaEventRecord(s->computed, stream));
    PKB_CHECK(cudaStreamWaitEvent(s->pushes, s->computed, 0));
    // To rank+1 first, then rank+2, ...: at any time each rank writes to a different peer.
    for (int j = 1; j < world; ++j) {
      void* dst = ctx->peer_ptr(ctx, chunk, (rank + j) % world);
      PKB_CHECK(cudaMemcpy2DAsync(dst, n * es, chunk, n * es, nl * es, h, cudaMemcpyDeviceToDevice, s->pushes));
    }
  }
  PKB_CHECK(cudaEventRecord(s->pushed, s->pushes));
  PKB_CHECK(cudaStreamWaitEvent(stream, s->pushed, 0));
  pkb::dev::barrier(ctx, stream, kChannel);
  PKB_CHECK(cudaGetLastError());
  return 0;
}
