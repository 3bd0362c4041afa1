#include "eval/compare_dirs.hpp"

#include <ATen/ATen.h>

#include <filesystem>
#include <stdexcept>

#include "eval/compare.hpp"
#include "spec/dtype.hpp"
#include "tensor/dtypes.hpp"
#include "tensor/save.hpp"

namespace pkb::eval {

namespace fs = std::filesystem;

DirReport compare_dirs(const std::string& a, const std::string& b,
                       const std::function<std::pair<double, double>(size_t, const std::string&)>& tolerance) {
  DirReport rep;
  for (int r = 0;; ++r) {
    std::string name = "/rank_" + std::to_string(r) + ".pt";
    bool in_a = fs::exists(a + name), in_b = fs::exists(b + name);
    if (!in_a && !in_b) break;
    if (in_a != in_b) throw std::runtime_error("rank_" + std::to_string(r) + ".pt is only in " + (in_a ? a : b));
    auto xa = tensor::load_saved(a + name), xb = tensor::load_saved(b + name);
    ++rep.ranks;
    if (xa.size() != xb.size()) {
      rep.ok = false;
      rep.lines.push_back("rank " + std::to_string(r) + ": " + std::to_string(xa.size()) + " outputs vs " +
                          std::to_string(xb.size()));
      continue;
    }
    for (size_t i = 0; i < xa.size(); ++i) {
      std::string dtype = spec::dtype_name(tensor::from_aten(xb[i].second.scalar_type()));
      auto [atol, rtol] = tolerance(i, dtype);
      Mismatch m = compare(xa[i].second, xb[i].second, atol, rtol);
      rep.ok = rep.ok && m.ok;
      std::string what = xa[i].first.empty() ? "output 0" : xa[i].first;
      if (xa[i].first != xb[i].first) what += " vs " + xb[i].first;
      rep.lines.push_back("rank " + std::to_string(r) + " " + what + ": " +
                          (m.ok ? "equal within atol " + std::to_string(atol) + ", rtol " + std::to_string(rtol)
                                : m.detail));
    }
  }
  if (rep.ranks == 0) throw std::runtime_error("no rank_<r>.pt in " + a + " or " + b);
  return rep;
}

}  // namespace pkb::eval
