#include "tensor/dtypes.hpp"

#include <stdexcept>

namespace pkb::tensor {

using spec::DType;

at::ScalarType to_aten(DType t) {
  switch (t) {
    case DType::bf16: return at::kBFloat16;
    case DType::fp16: return at::kHalf;
    case DType::fp32: return at::kFloat;
    case DType::fp64: return at::kDouble;
    case DType::int8: return at::kChar;
    case DType::int16: return at::kShort;
    case DType::int32: return at::kInt;
    case DType::int64: return at::kLong;
    case DType::uint8: return at::kByte;
    case DType::boolean: return at::kBool;
    case DType::fp8_e4m3: return at::kFloat8_e4m3fn;
    case DType::fp8_e5m2: return at::kFloat8_e5m2;
    case DType::complex64: return at::kComplexFloat;
    case DType::complex128: return at::kComplexDouble;
  }
  throw std::invalid_argument("bad dtype");
}

DType from_aten(at::ScalarType t) {
  for (DType d : {DType::bf16, DType::fp16, DType::fp32, DType::fp64, DType::int8, DType::int16, DType::int32,
                  DType::int64, DType::uint8, DType::boolean, DType::fp8_e4m3, DType::fp8_e5m2, DType::complex64,
                  DType::complex128})
    if (to_aten(d) == t) return d;
  throw std::invalid_argument(std::string("dtype ") + c10::toString(t) + " has no name in pkb specs");
}

at::ScalarType resolve(const std::string& dtype, at::ScalarType dt) {
  return dtype == "dt" ? dt : to_aten(spec::dtype_from_name(dtype));
}

}  // namespace pkb::tensor
