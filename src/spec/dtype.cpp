#include "spec/dtype.hpp"

#include <stdexcept>

namespace pkb::spec {

namespace {

struct Info {
  DType type;
  const char* name;
  int size;
  double atol, rtol;
};

// bf16 keeps 8 bits of mantissa (1e-2 is about two ulps at 1); fp8 e4m3 keeps 3.
constexpr Info kInfo[] = {
    {DType::bf16, "bf16", 2, 1e-2, 1e-2},
    {DType::fp16, "fp16", 2, 1e-3, 1e-3},
    {DType::fp32, "fp32", 4, 1e-4, 1e-4},
    {DType::fp64, "fp64", 8, 1e-9, 1e-9},
    {DType::int8, "int8", 1, 0, 0},
    {DType::int16, "int16", 2, 0, 0},
    {DType::int32, "int32", 4, 0, 0},
    {DType::int64, "int64", 8, 0, 0},
    {DType::uint8, "uint8", 1, 0, 0},
    {DType::boolean, "bool", 1, 0, 0},
    {DType::fp8_e4m3, "fp8_e4m3", 1, 1e-2, 0.125},
    {DType::fp8_e5m2, "fp8_e5m2", 1, 1e-2, 0.25},
    {DType::complex64, "complex64", 8, 1e-4, 1e-4},
    {DType::complex128, "complex128", 16, 1e-9, 1e-9},
};

const Info& info(DType t) {
  for (auto& i : kInfo)
    if (i.type == t) return i;
  throw std::invalid_argument("bad dtype");
}

}  // namespace

bool is_dtype_name(const std::string& name) {
  for (auto& i : kInfo)
    if (name == i.name) return true;
  return false;
}

DType dtype_from_name(const std::string& name) {
  for (auto& i : kInfo)
    if (name == i.name) return i.type;
  throw std::invalid_argument("unknown dtype '" + name + "'; use one of " + dtype_names());
}

const char* dtype_name(DType t) { return info(t).name; }

std::string dtype_names() {
  std::string s;
  for (auto& i : kInfo) s += (s.empty() ? "" : ", ") + std::string(i.name);
  return s;
}

int dtype_size(DType t) { return info(t).size; }

bool dtype_is_float(DType t) {
  switch (t) {
    case DType::bf16: case DType::fp16: case DType::fp32: case DType::fp64:
    case DType::fp8_e4m3: case DType::fp8_e5m2: case DType::complex64: case DType::complex128:
      return true;
    default:
      return false;
  }
}

bool dtype_is_complex(DType t) { return t == DType::complex64 || t == DType::complex128; }

double default_atol(DType t) { return info(t).atol; }
double default_rtol(DType t) { return info(t).rtol; }

}  // namespace pkb::spec
