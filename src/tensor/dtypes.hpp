// Spec dtypes <-> ATen scalar types.
#pragma once

#include <c10/core/ScalarType.h>

#include "spec/dtype.hpp"

namespace pkb::tensor {

at::ScalarType to_aten(spec::DType t);
spec::DType from_aten(at::ScalarType t);  // throws for types specs cannot name
// The ATen type of a spec tensor's dtype string ("dt" is the problem's element type).
at::ScalarType resolve(const std::string& dtype, at::ScalarType dt);

}  // namespace pkb::tensor
