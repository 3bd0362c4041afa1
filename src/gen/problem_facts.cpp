#include "gen/problem_facts.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "gen/error.hpp"
#include "spec/dtype.hpp"
#include "io/text.hpp"

namespace pkb::gen {

namespace {

std::string number(double v) { return io::format("%.10g", v); }

std::string resolve_dtype(const std::string& name, const std::string& dt) { return name == "dt" ? dt : name; }

std::string shape_formula(const spec::TensorSpec& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? ", " : "") + std::string(t.shape[i].dynamic ? "<= " : "") + t.shape[i].size.text();
  return s + "]";
}

std::string shape_value(const spec::TensorSpec& t, const spec::Vars& v) {
  std::string s = "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? ", " : "") + std::string(t.shape[i].dynamic ? "<= " : "") + std::to_string(t.shape[i].size.eval_int(v));
  return s + "]";
}

// "[1024, 1024]", or "[8, 4] on rank 0, [0, 4] on ranks 1-7" when shapes depend on the rank.
std::string shapes_by_rank(const spec::ProblemSpec& s, const spec::TensorSpec& t, const Setting& at) {
  std::vector<std::string> per_rank;
  for (int r = 0; r < at.world; ++r) per_rank.push_back(shape_value(t, s.vars_for(at.size, at.world, r)));
  std::string out;
  for (int a = 0; a < at.world;) {
    int b = a;
    while (b + 1 < at.world && per_rank[b + 1] == per_rank[a]) ++b;
    if (a == 0 && b == at.world - 1) return per_rank[0];
    out += (out.empty() ? "" : ", ") + per_rank[a] +
           (a == b ? " on rank " + std::to_string(a) : " on ranks " + std::to_string(a) + "-" + std::to_string(b));
    a = b + 1;
  }
  return out;
}

std::string init_words(const spec::TensorSpec& t) {
  std::string how =
      t.init.text() == "custom" ? "built by the reference's make_inputs (see its source)" : "values " + t.init.text();
  return how + (t.shared ? ", equal on every rank" : ", different on every rank") + ", fresh every trial";
}

std::string arg_value(const spec::ArgValue& v) {
  struct {
    std::string operator()(int64_t i) const { return std::to_string(i) + " (int)"; }
    std::string operator()(double d) const { return number(d) + " (float)"; }
    std::string operator()(bool b) const { return std::string(b ? "true" : "false") + " (bool)"; }
    std::string operator()(const std::string& s) const { return "\"" + s + "\" (string)"; }
    std::string operator()(const std::vector<int64_t>& l) const {
      std::string s = "[";
      for (size_t i = 0; i < l.size(); ++i) s += (i ? ", " : "") + std::to_string(l[i]);
      return s + "] (int list)";
    }
  } visit;
  return std::visit(visit, v);
}

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

std::string significant(double v) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string megabytes(double bytes) { return significant(bytes / 1e6) + " MB"; }

}  // namespace

int nearest_world(const spec::ProblemSpec& s, int wanted, const std::string& size) {
  for (int d = 0; d <= 1024; ++d)
    for (int w : {wanted - d, wanted + d})
      if (w >= 1 && s.world_size_error(w, size).empty()) return w;
  return wanted;
}

std::string element_type(const spec::ProblemSpec& s, const Setting& at) {
  return at.dtype.empty() ? s.dtype : at.dtype;
}

std::string problem_facts(const spec::ProblemSpec& s, const Setting& at) {
  std::map<std::string, int64_t> sizes;
  try {
    sizes = s.size_values(at.size);
  } catch (const spec::SpecError& e) {
    throw GenError(e.what());
  }
  if (std::string err = s.world_size_error(at.world, at.size); !err.empty()) throw GenError(err);
  const std::string dt = element_type(s, at);
  std::ostringstream o;
  o << "Problem " << s.slug << " (original #" << s.id << ", " << s.stem << "; " << spec::category_name(s.category)
    << ")\n";
  o << "Origin: " << s.origin << "\n\n";
  o << s.description;
  if (!s.description.empty() && s.description.back() != '\n') o << "\n";

  o << "\nWorld size: W ranks, " << s.world_size_summary() << ".\n"
    << "The candidate must be correct for every allowed W and size; the values below are for W = " << at.world
    << "\nand the size \"" << at.size << "\".\n";
  std::vector<std::string> items;
  for (auto& [k, v] : sizes) items.push_back(k + " = " + std::to_string(v));
  o << "Sizes: " << join(items) << "\n";
  spec::Vars v0 = s.vars_for(at.size, at.world, 0);
  if (!s.vars.empty()) {
    items.clear();
    for (auto& [name, e] : s.vars) {
      std::string value = number(v0.at(name));
      items.push_back(name + " = " + e.text() + (e.text() == value ? "" : " = " + value));
    }
    o << "Derived values (at rank 0): " << join(items) << "\n";
  }
  o << "Element type: dt = " << dt << "\n";

  o << "\nInputs, in this order (pkb_run's in[i]; read-only unless said):" << (s.inputs.empty() ? " none" : "") << "\n";
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    auto& t = s.inputs[i];
    o << "  in[" << i << "] " << t.name << ": " << resolve_dtype(t.dtype, dt) << " " << shape_formula(t) << " = "
      << shapes_by_rank(s, t, at) << "; " << init_words(t) << (t.readonly ? "" : "; may be modified")
      << (t.host ? "; in host memory" : "") << "\n";
  }
  o << "Outputs, in this order (pkb_run's out[i]):\n";
  for (size_t i = 0; i < s.outputs.size(); ++i) {
    auto& t = s.outputs[i];
    std::string type = resolve_dtype(t.dtype, dt);
    spec::DType d = spec::dtype_from_name(type);
    double atol = t.atol.value_or(spec::default_atol(d)), rtol = t.rtol.value_or(spec::default_rtol(d));
    o << "  out[" << i << "] " << t.name << ": " << type << " " << shape_formula(t) << " = " << shapes_by_rank(s, t, at)
      << "; checked on every rank like torch.allclose(atol=" << number(atol) << ", rtol=" << number(rtol) << ")"
      << (t.mismatch > 0 ? ", save that a fraction " + number(t.mismatch) + " of its elements may lie outside" : "")
      << (t.host ? "; in host memory" : "") << "\n";
    for (auto& dim : t.shape)
      if (dim.dynamic) {
        o << "    (a dim written \"<= n\" depends on the data: n is the capacity; write the actual size into "
             "sizes[d])\n";
        break;
      }
  }
  items.clear();
  for (auto& a : s.args) items.push_back(a.name + " = " + arg_value(a.value));
  std::vector<std::string> ints;
  for (auto& [k, v] : sizes) ints.push_back(k);
  ints.insert(ints.end(), {"W", "rank"});
  for (auto& [name, e] : s.vars) ints.push_back(name);
  o << "Arguments in ctx->args (read with ctx->arg_int / ctx->arg_float): "
    << (items.empty() ? "" : join(items) + "; then ") << "as ints " << join(ints) << "\n";

  spec::Vars rv = s.roofline_vars(at.size, at.world, 0, dt);
  auto eval = [&](const spec::Expr& e) { return e.empty() ? -1.0 : e.eval(rv); };
  double nv = eval(s.roofline.nvlink_bytes), hbm = eval(s.roofline.hbm_bytes), fl = eval(s.roofline.flops);
  items.clear();
  bool cpu = at.device == "cpu";
  if (nv >= 0) items.push_back((cpu ? "to and from peers " : "NVLink ") + megabytes(nv));
  if (hbm >= 0) items.push_back((cpu ? "memory " : "HBM ") + megabytes(hbm));
  if (fl >= 0) items.push_back(significant(fl / 1e9) + " GFLOP");
  if (!items.empty()) o << "Least traffic and work per rank at these sizes: " << join(items) << "\n";
  return o.str();
}

std::string interface_summary(const spec::ProblemSpec& s) {
  std::string out = "inputs:";
  for (auto& t : s.inputs) out += " " + t.name + " " + t.dtype + " " + shape_formula(t) + ";";
  out += " outputs:";
  for (auto& t : s.outputs) out += " " + t.name + " " + t.dtype + " " + shape_formula(t) + ";";
  return out;
}

std::string original_call(const spec::ProblemSpec& s) {
  if (!s.original.declared || !s.original.unsupported.empty()) return "";
  std::string out = "pkb calls `solution(*args)` on every rank with these positional arguments, in this order "
                    "(a name is the problem's input of that name, a torch tensor on the rank's device; the "
                    "problem's args, sizes and vars are plain numbers; list(x) is x.tolist(), item(x) x.item(), "
                    "unbind(x) the list of x's slices along dim 0, WORLD dist.group.WORLD):\n";
  for (size_t i = 0; i < s.original.args.size(); ++i) {
    const std::string& a = s.original.args[i];
    const spec::TensorSpec* t = s.input(a);
    out += "  " + std::to_string(i + 1) + ". `" + a + "`" +
           (t ? " (input " + t->name + (t->host ? ", in host memory" : "") + ")" : "") + "\n";
  }
  std::string ret;
  for (auto& r : s.original.returns) ret += (ret.empty() ? "" : ", ") + (r == "_" ? std::string("<any value, unused>") : r);
  out += s.original.returns.size() == 1 ? "and reads its result as the output " + ret + " (one tensor)."
                                        : "and reads its result as a tuple (or list) of " +
                                              std::to_string(s.original.returns.size()) + " values: " + ret + ".";
  return out;
}

}  // namespace pkb::gen
