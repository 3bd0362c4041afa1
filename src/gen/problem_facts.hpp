// A problem's spec as a prompt states it: what it computes, world sizes, and every input,
// output and argument with its shape as a formula and evaluated, dtype, initialisation and
// tolerance, in the order the candidate receives them.
#pragma once

#include <string>

#include "spec/spec.hpp"

namespace pkb::gen {

struct Setting {
  int world = 8;
  std::string size = "default";
  std::string dtype;  // what 'dt' stands for; "" keeps the spec's
  std::string device = "cuda";  // cpu: traffic is peers' and memory's, not NVLink's and HBM's
};

// `wanted` when the problem runs with it at `size`, else the nearest W it runs with.
int nearest_world(const spec::ProblemSpec& s, int wanted, const std::string& size);

// The dtype 'dt' resolves to for this setting.
std::string element_type(const spec::ProblemSpec& s, const Setting& at);

// Throws GenError when the size is unknown or the world size does not fit the problem.
std::string problem_facts(const spec::ProblemSpec& s, const Setting& at);

// Inputs and outputs in one line each, formulas only: for in-context examples.
std::string interface_summary(const spec::ProblemSpec& s);

// How pkb calls an original-format module's solution for this problem (its spec's
// [original]): the arguments in order and what it must return; "" when the spec has none.
std::string original_call(const spec::ProblemSpec& s);

}  // namespace pkb::gen
