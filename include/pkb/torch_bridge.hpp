// Optional: libtorch ops inside a candidate. Including this header makes pkb build the
// candidate against libtorch (a slower compile). Views share memory with pkb's tensors.
//
//   #include "pkb/torch_bridge.hpp"
//   int pkb_run(pkb_ctx* ctx, const pkb_tensor* in, int, pkb_tensor* out, int) {
//     pkb::TorchStream on(ctx);             // torch ops go to ctx->stream
//     pkb::as_tensor(ctx, out[0]).copy_(at::matmul(pkb::as_tensor(ctx, in[0]), pkb::as_tensor(ctx, in[1])));
//     return 0;
//   }
#pragma once

#include <ATen/ATen.h>

#include "pkb/solution.h"

#ifdef __CUDACC__
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace pkb {

inline at::ScalarType aten_dtype(int32_t d) {
  switch (d) {
    case PKB_BF16: return at::kBFloat16;
    case PKB_FP16: return at::kHalf;
    case PKB_FP32: return at::kFloat;
    case PKB_FP64: return at::kDouble;
    case PKB_INT8: return at::kChar;
    case PKB_INT16: return at::kShort;
    case PKB_INT32: return at::kInt;
    case PKB_INT64: return at::kLong;
    case PKB_UINT8: return at::kByte;
    case PKB_BOOL: return at::kBool;
    case PKB_FP8_E4M3: return at::kFloat8_e4m3fn;
    case PKB_FP8_E5M2: return at::kFloat8_e5m2;
    case PKB_COMPLEX64: return at::kComplexFloat;
    default: return at::kComplexDouble;
  }
}

// A tensor view of a pkb_tensor (no copy).
inline at::Tensor as_tensor(const pkb_ctx* ctx, const pkb_tensor& t) {
  at::Device dev = (t.on_host || ctx->device < 0) ? at::Device(at::kCPU) : at::Device(at::kCUDA, ctx->device);
  return at::from_blob(t.data, at::IntArrayRef(t.sizes, t.ndim), at::IntArrayRef(t.strides, t.ndim),
                       at::TensorOptions().dtype(aten_dtype(t.dtype)).device(dev));
}

#ifdef __CUDACC__
// Makes ctx->stream torch's current stream for the scope.
struct TorchStream {
  explicit TorchStream(const pkb_ctx* ctx)
      : guard(c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(ctx->stream), ctx->device)) {}
  c10::cuda::CUDAStreamGuard guard;
};
#else
struct TorchStream {
  explicit TorchStream(const pkb_ctx*) {}
};
#endif

}  // namespace pkb
