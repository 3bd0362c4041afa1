// Every problem pkb knows: the specs under the problem folders, each paired with a
// compiled reference and its source file. Inconsistencies fail at load, naming the file.
#pragma once

#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace pkb::spec {

class Registry {
 public:
  // `reference_slugs`: the references compiled in or loaded. A spec's reference source is
  // <dir>/../reference/<slug>.cpp, <dir>/<slug>.cpp, or <dir>/references.cpp (one file for
  // a folder of extra problems). Throws SpecError.
  static Registry load(const std::vector<std::string>& problem_dirs, const std::vector<std::string>& reference_slugs);

  // By slug, original id ("14") or original stem ("14_gemm_allgather"). Throws SpecError
  // with the closest names when nothing matches.
  const ProblemSpec& find(const std::string& key) const;
  const std::vector<ProblemSpec>& all() const { return specs_; }
  std::string reference_source(const ProblemSpec& s) const;

 private:
  std::vector<ProblemSpec> specs_;
  std::vector<std::string> sources_;
};

}  // namespace pkb::spec
