// Declared inputs: shapes from the spec's formulas, values from its init rule, drawn from
// a seeded generator on the rank's device.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace pkb::tensor {

// Builds one declared input. Throws std::invalid_argument for a rule that does not fit
// the dtype (randn into an integer tensor).
at::Tensor make_input(const spec::TensorSpec& t, const spec::Vars& vars, at::ScalarType type, at::Device device,
                      at::Generator& gen);

// A tensor over memory pkb manages (the symmetric heap), as seen from `device`. Peers'
// regions live on other GPUs: the view names this rank's device, not the memory's.
at::Tensor view_of(void* data, c10::IntArrayRef shape, at::ScalarType type, at::Device device);

// "[2, 3]".
std::string shape_str(c10::IntArrayRef s);

// Seeds: a run seed and a (trial, stream) pair give a new 64-bit seed (splitmix64).
uint64_t derive_seed(uint64_t run_seed, int64_t trial, int64_t stream);

}  // namespace pkb::tensor
