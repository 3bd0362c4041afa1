// Element types by name, as specs, results and the solution ABI spell them.
#pragma once

#include <string>

namespace pkb::spec {

enum class DType {
  bf16, fp16, fp32, fp64, int8, int16, int32, int64, uint8, boolean,
  fp8_e4m3, fp8_e5m2, complex64, complex128,
};

bool is_dtype_name(const std::string& name);
DType dtype_from_name(const std::string& name);  // throws std::invalid_argument
const char* dtype_name(DType t);
std::string dtype_names();                        // "bf16, fp16, ..." for error messages
int dtype_size(DType t);
bool dtype_is_float(DType t);                     // floating point, fp8 and complex included
bool dtype_is_complex(DType t);

// Tolerances used when a spec gives none: exact for integers and bool.
double default_atol(DType t);
double default_rtol(DType t);

}  // namespace pkb::spec
