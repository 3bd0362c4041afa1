// tp_gemm_reducescatter on CUDA, no NCCL: rank r holds the K-slices a = A_r (M, Kl) and
// b = B_r (Kl, N); it returns rows [r*Ml, (r+1)*Ml) of sum_q A_q @ B_q, (Ml, N), Ml = M/W.
//
// Algorithm: compute the partial product one destination block at a time and push each block
// to its owner while the next one is computed. Every rank owns an inbox in the symmetric
// heap, (W, Ml, N): slot q holds rank q's partial rows of the owner's block. Rank r
// multiplies the rows of block t = r+1, r+2, ..., r+W (mod W), so the ranks start on different
// owners and its own block comes last. cuBLAS on ctx->stream writes block t, rounded to dt as
// in the reference, into a local staging buffer; a side stream copies it into slot r of rank
// t's inbox (copy engines, over NVLink) and then signals t on channel 1. The own block goes
// straight into the own slot. At the end a one-block kernel waits for the W-1 signals and one
// kernel sums the W slots in fp32, rounding once into c. The copy engines move data without
// taking SMs from the GEMM; only the last push and the sum (one pass over Ml*N*W elements)
// are exposed. Each rank receives W-1 blocks, the reduce-scatter minimum.
//
// A call is barrier, pipeline, wait, sum, all joined on ctx->stream. The barrier (one block,
// channel 0) guarantees that every rank has summed the previous call's inbox before anyone
// pushes into it again; the signals guarantee that every block has landed before the sum.
// No closing barrier is needed: peers only write into my inbox, which my own next barrier
// protects, and never touch my inputs or outputs. The only spinning kernels have one block,
// so ranks sharing a GPU always make progress. At W=1 the call is one GEMM.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>
#include <string>

#include "pkb/device.cuh"
#include "pkb/solution.h"

namespace {

constexpr int kChannel = 0;                      // our barrier's signal-pad channel (pkb keeps the last one)
constexpr int kSignal = 1;                       // the channel of "your block has landed"
constexpr int kThreads = 512;                    // threads per block of the sum
constexpr size_t kWorkspace = size_t{32} << 20;  // cuBLAS workspace, its recommendation for Hopper

// Row-major C (m, n) = A (m, k) @ B (k, n), each with its own row pitch (ld*), all of `type`,
// accumulated in fp32. cuBLAS is column-major, so it computes C^T = B^T A^T.
cublasStatus_t gemm(cublasHandle_t h, cudaDataType type, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                    const void* b, int64_t ldb, void* c, int64_t ldc) {
  const float one = 1.f, zero = 0.f;
  return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, int(n), int(m), int(k), &one, b, type, int(ldb), a, type, int(lda),
                      &zero, c, type, int(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

// Tells `peer` that this rank's block has landed in its inbox (what precedes this kernel on
// its stream is complete and visible).
__global__ void signal_kernel(uint32_t* const* pads, int rank, int world, int peer) {
  __threadfence_system();
  pkb::dev::put_signal(pads[peer], pkb::dev::slot(kSignal, rank, world));
}

// Waits until every peer's block has landed in this rank's inbox; one thread per peer.
__global__ void wait_kernel(uint32_t* const* pads, int rank, int world) {
  int q = threadIdx.x;
  if (q < world && q != rank) pkb::dev::wait_signal(pads[rank], pkb::dev::slot(kSignal, q, world));
}

using pkb::dev::from_float;
using pkb::dev::Pack;
using pkb::dev::to_float;

// c[i] = the fp32 sum over q of inbox[q][i], rounded once; slots are n elements apart. With
// `vectorise` (inbox, c and n * sizeof(T) all 16-byte aligned) loads and stores are 16 bytes
// wide; what is left over goes element by element.
template <class T>
__global__ void sum_kernel(const T* inbox, int world, size_t n, T* c, bool vectorise) {
  constexpr int kPack = 16 / sizeof(T);
  size_t tid = blockIdx.x * size_t(blockDim.x) + threadIdx.x, stride = size_t(gridDim.x) * blockDim.x;
  size_t packs = vectorise ? n / kPack : 0;
  for (size_t v = tid; v < packs; v += stride) {
    float acc[kPack] = {};
    for (int q = 0; q < world; ++q) {
      Pack<T> in = reinterpret_cast<const Pack<T>*>(inbox + q * n)[v];
#pragma unroll
      for (int j = 0; j < kPack; ++j) acc[j] += to_float(in.v[j]);
    }
    Pack<T> sum;
#pragma unroll
    for (int j = 0; j < kPack; ++j) sum.v[j] = from_float<T>(acc[j]);
    reinterpret_cast<Pack<T>*>(c)[v] = sum;
  }
  for (size_t i = packs * kPack + tid; i < n; i += stride) {
    float acc = 0.f;
    for (int q = 0; q < world; ++q) acc += to_float(inbox[q * n + i]);
    c[i] = from_float<T>(acc);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Launches sum_kernel<T> on `blocks` blocks.
template <class T>
cudaError_t launch_sum(const void* inbox, int world, size_t n, void* c, int blocks, cudaStream_t stream) {
  bool vectorise = aligned16(inbox) && aligned16(c) && n * sizeof(T) % 16 == 0;
  size_t packs = vectorise ? n * sizeof(T) / 16 : n;
  blocks = int(std::clamp<size_t>((packs + kThreads - 1) / kThreads, 1, blocks));
  sum_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(inbox), world, n, static_cast<T*>(c), vectorise);
  return cudaGetLastError();
}

using Sum = cudaError_t (*)(const void*, int, size_t, void*, int, cudaStream_t);

// The cuBLAS type and the sum of a pkb dtype; false for dtypes this candidate does not handle.
bool for_dtype(int dtype, cudaDataType* type, Sum* launch) {
  switch (dtype) {
    case PKB_BF16: *type = CUDA_R_16BF, *launch = launch_sum<__nv_bfloat16>; return true;
    case PKB_FP16: *type = CUDA_R_16F, *launch = launch_sum<__half>; return true;
    case PKB_FP32: *type = CUDA_R_32F, *launch = launch_sum<float>; return true;
    default: return false;
  }
}

// What pkb_init makes and pkb_run reuses.
struct State {
  cudaDataType type = CUDA_R_16BF;
  Sum sum = nullptr;
  int sum_blocks = 1;              // at most four blocks per SM (the sum strides over the rest)
  cublasHandle_t blas = nullptr;
  void* workspace = nullptr;
  void* inbox = nullptr;           // symmetric (W, Ml, N); slot q is rank q's partial of my block
  void* staging = nullptr;         // local (M, N): the blocks bound for peers
  cudaStream_t pushes = nullptr;   // the pushes' stream, forked from ctx->stream every call
  cudaEvent_t computed = nullptr;  // the block's GEMM is done
  cudaEvent_t pushed = nullptr;    // every push is done

  ~State() {
    cudaDeviceSynchronize();  // nothing in flight may still use what we free
    if (blas) cublasDestroy(blas);
    cudaFree(workspace);
    cudaFree(staging);
    if (computed) cudaEventDestroy(computed);
    if (pushed) cudaEventDestroy(pushed);
    if (pushes) cudaStreamDestroy(pushes);
  }
};

}  // namespace

PKB_EXPORT int pkb_abi_version(void) { return PKB_ABI_VERSION; }

PKB_EXPORT int pkb_init(pkb_ctx* ctx, const pkb_tensor* in, int, const pkb_tensor* out, int) {
  State* s = new State;
  ctx->user = s;
  if (!for_dtype(in[0].dtype, &s->type, &s->sum)) {
    ctx->set_error(ctx, "tp_gemm_reducescatter: needs bf16, fp16 or fp32");
    return 1;
  }
  PKB_CHECK(cublasCreate(&s->blas));
  PKB_CHECK(cublasSetMathMode(s->blas, cublasMath_t(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  PKB_CHECK(cudaMalloc(&s->workspace, kWorkspace));
  if (ctx->world == 1) return 0;

  int sms = 0;
  PKB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx->device));
  s->sum_blocks = std::max(1, 4 * sms);
  size_t bytes = size_t(in[0].sizes[0]) * out[0].sizes[1] * pkb_dtype_size(in[0].dtype);  // M * N elements
  s->inbox = ctx->symm_alloc(ctx, bytes);
  if (!s->inbox) return 1;  // symm_alloc has said why
  PKB_CHECK(cudaMalloc(&s->staging, bytes));
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
  const int64_t m = in[0].sizes[0], kl = in[0].sizes[1], n = in[1].sizes[1], ml = out[0].sizes[0];
  const size_t es = pkb_dtype_size(in[0].dtype);
  const char* a = static_cast<const char*>(in[0].data);
  const void* b = in[1].data;
  void* c = out[0].data;

  PKB_CHECK(cublasSetStream(s->blas, stream));  // this resets the workspace, so set it after
  PKB_CHECK(cublasSetWorkspace(s->blas, s->workspace, kWorkspace));
  if (world == 1) {
    PKB_CHECK(gemm(s->blas, s->type, m, n, kl, a, kl, b, n, c, n));
    return 0;
  }

  const size_t block = size_t(ml) * n * es;  // bytes of one (Ml, N) block
  char* inbox = static_cast<char*>(s->inbox);
  char* staging = static_cast<char*>(s->staging);
  pkb::dev::barrier(ctx, stream, kChannel);
  PKB_CHECK(cudaGetLastError());
  for (int j = 1; j < world; ++j) {
    const int t = (rank + j) % world;  // the block's owner: rank+1 first, so every rank starts on another
    char* part = staging + t * block;
    PKB_CHECK(gemm(s->blas, s->type, ml, n, kl, a + t * ml * kl * es, kl, b, n, part, n));
    PKB_CHECK(cudaEventRecord(s->computed, stream));
    PKB_CHECK(cudaStreamWaitEvent(s->pushes, s->computed, 0));
    char* slot = static_cast<char*>(ctx->peer_ptr(ctx, inbox, t)) + rank * block;
    PKB_CHECK(cudaMemcpyAsync(slot, part, block, cudaMemcpyDeviceToDevice, s->pushes));
    signal_kernel<<<1, 1, 0, s->pushes>>>(ctx->pads_dev, rank, world, t);
    PKB_CHECK(cudaGetLastError());
  }
  // The own block last, straight into the own slot, while the last push is in flight.
  PKB_CHECK(gemm(s->blas, s->type, ml, n, kl, a + rank * ml * kl * es, kl, b, n, inbox + rank * block, n));
  wait_kernel<<<1, (world + 31) / 32 * 32, 0, stream>>>(ctx->pads_dev, rank, world);
  PKB_CHECK(cudaGetLastError());
  PKB_CHECK(cudaEventRecord(s->pushed, s->pushes));
  PKB_CHECK(cudaStreamWaitEvent(stream, s->pushed, 0));
  PKB_CHECK(s->sum(inbox, world, size_t(ml) * n, c, s->sum_blocks, stream));
  return 0;
}
