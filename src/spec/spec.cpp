#include "spec/spec.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "io/text.hpp"
#include "io/toml_reader.hpp"
#include "spec/dtype.hpp"

namespace pkb::spec {

namespace {

const std::vector<std::pair<std::string, std::string>> kCategories = {
    {"coll", "Collective communication primitives"},
    {"dp", "Data Parallel"},
    {"tp", "Tensor Parallel"},
    {"cp", "Context Parallel"},
    {"sp", "Sequence Parallel (Ulysses)"},
    {"pp", "Pipeline Parallel"},
    {"ep", "Expert Parallel"},
    {"fsdp", "FSDP/ZeRO"},
    {"rec", "Recommendation / Sparse Embedding"},
    {"gnn", "Graph Neural Networks"},
    {"sci", "Scientific Computing"},
    {"misc", "Rendering & Sorting (other)"},
    {"test", "Harness self-tests (not benchmark problems)"},
};

const std::set<std::string> kInits = {"randn", "uniform", "randint", "zeros", "ones", "full",
                                      "arange", "linspace", "custom"};

const std::set<std::string> kTopKeys = {"slug", "id", "stem", "category", "origin", "description", "dtype", "world",
                                        "constraints", "vars", "sizes", "inputs", "outputs", "args", "roofline",
                                        "memory", "timeout", "original"};

// The strict TOML reader, plus formulas.
class Reader : public io::TomlReader {
 public:
  using io::TomlReader::TomlReader;

  Expr formula(const toml::node& n, const std::string& what) const {
    std::string text;
    if (n.is_integer() || n.is_floating_point()) {
      std::ostringstream os;
      os << *n.value<double>();
      text = os.str();
    } else {
      text = str(n, what);
    }
    try {
      return Expr::parse(text);
    } catch (const ExprError& e) {
      fail(n, what + ": " + e.what() + (e.column ? " at column " + std::to_string(e.column) : ""));
    }
  }
};

std::vector<Dim> read_shape(const Reader& r, const toml::node& n, const std::string& what, bool allow_dynamic) {
  const toml::array* a = n.as_array();
  if (!a) r.fail(n, what + " must be an array of formulas, e.g. shape = [\"M\", \"N\"]");
  std::vector<Dim> dims;
  for (auto&& d : *a) {
    Dim dim;
    std::string text = d.is_string() ? *d.value<std::string>() : "";
    size_t p = text.find_first_not_of(' ');
    if (p != std::string::npos && text.compare(p, 2, "<=") == 0) {
      if (!allow_dynamic) r.fail(d, what + ": '<=' (a data-dependent size) is only allowed in outputs");
      dim.dynamic = true;
      try {
        dim.size = Expr::parse(text.substr(p + 2));
      } catch (const ExprError& e) {
        r.fail(d, what + ": " + e.what());
      }
    } else {
      dim.size = r.formula(d, what);
    }
    dims.push_back(dim);
  }
  return dims;
}

TensorSpec read_tensor(const Reader& r, const toml::node& n, bool is_input) {
  const char* kind = is_input ? "[[inputs]]" : "[[outputs]]";
  const toml::table* t = n.as_table();
  if (!t) r.fail(n, std::string(kind) + " entries must be tables");
  std::set<std::string> keys = {"name", "shape", "dtype", "host"};
  if (is_input) keys.insert({"init", "shared", "readonly"});
  else keys.insert({"atol", "rtol", "mismatch", "ties"});
  TensorSpec ts;
  ts.line = static_cast<int>(t->source().begin.line);
  ts.name = r.str(r.need(*t, "name", kind, "name = \"x\""), "name");
  std::string where = std::string(kind) + " '" + ts.name + "'";
  r.only_keys(*t, keys, where);
  ts.shape = read_shape(r, r.need(*t, "shape", where, "shape = [\"M\", \"N\"] (or [] for a scalar)"),
                        where + " shape", !is_input);
  const toml::node& dt = r.need(*t, "dtype", where, "dtype = \"dt\" (the problem's element type) or e.g. \"fp32\"");
  ts.dtype = r.str(dt, where + " dtype");
  if (ts.dtype != "dt" && !is_dtype_name(ts.dtype))
    r.fail(dt, where + ": unknown dtype '" + ts.dtype + "'; use dt or one of " + dtype_names());
  if (auto* h = t->get("host")) ts.host = r.boolean(*h, where + " host");
  if (is_input) {
    const toml::node& init = r.need(*t, "init", where, "init = \"randn\" (or randint(a, b), custom, ...)");
    ts.init = r.formula(init, where + " init");
    if (!ts.init.is_call() || !kInits.count(ts.init.call_name())) {
      std::string list;
      for (auto& i : kInits) list += (list.empty() ? "" : ", ") + i;
      r.fail(init, where + ": init must be one of " + list);
    }
    if (auto* s = t->get("shared")) ts.shared = r.boolean(*s, where + " shared");
    if (auto* ro = t->get("readonly")) ts.readonly = r.boolean(*ro, where + " readonly");
  } else {
    if (auto* a = t->get("atol")) ts.atol = r.real(*a, where + " atol");
    if (auto* rt = t->get("rtol")) ts.rtol = r.real(*rt, where + " rtol");
    if (auto* mm = t->get("mismatch")) {
      ts.mismatch = r.real(*mm, where + " mismatch");
      if (!(ts.mismatch >= 0 && ts.mismatch <= kMaxMismatch))
        r.fail(*mm, where + ": mismatch is the fraction of elements allowed outside atol/rtol, from 0 to " +
                        io::format("%g", kMaxMismatch) + " (e.g. mismatch = 1e-3), not " + io::format("%g", ts.mismatch));
    }
    if (auto* ties = t->get("ties")) {
      ts.ties = r.str(*ties, where + " ties");
      if (ts.ties.find_first_not_of(" \t\n") == std::string::npos)
        r.fail(*ties, where + ": ties says which answers are equally valid, in words (e.g. ties = \"labels of equal "
                              "similarity in any order\"); remove it if there are none");
      // The reference's check judges every differing element; an allowance on top would
      // let wrong choices through unjudged.
      if (ts.mismatch > 0) r.fail(*ties, where + ": ties and mismatch exclude each other; keep one");
    }
  }
  return ts;
}

Arg read_arg(const Reader& r, const std::string& name, const toml::node& v) {
  Arg a{name, int64_t{0}};
  if (v.is_integer()) a.value = *v.value<int64_t>();
  else if (v.is_floating_point()) a.value = *v.value<double>();
  else if (v.is_boolean()) a.value = *v.value<bool>();
  else if (v.is_string()) a.value = *v.value<std::string>();
  else if (auto* arr = v.as_array()) {
    std::vector<int64_t> xs;
    for (auto&& x : *arr) xs.push_back(r.integer(x, "arg '" + name + "' element"));
    a.value = xs;
  } else {
    r.fail(v, "arg '" + name + "' must be an integer, float, bool, string or array of integers");
  }
  return a;
}

// Orders derived vars so each comes after the vars it uses; fails on cycles and on
// names that are neither sizes, W, rank nor other vars.
std::vector<std::pair<std::string, Expr>> order_vars(const Reader& r, const toml::table& t,
                                                     const std::set<std::string>& base) {
  std::vector<std::pair<std::string, Expr>> pending, done;
  std::map<std::string, const toml::node*> where;
  for (auto&& [k, v] : t) {
    std::string name(k.str());
    if (base.count(name)) r.fail(v, "var '" + name + "' shadows a size or W/rank; rename it");
    pending.emplace_back(name, r.formula(v, "var '" + name + "'"));
    where[name] = &v;
  }
  std::set<std::string> known = base;
  while (!pending.empty()) {
    auto ready = std::find_if(pending.begin(), pending.end(), [&](auto& p) {
      for (auto& v : p.second.variables())
        if (!known.count(v)) return false;
      return true;
    });
    if (ready == pending.end()) {
      auto& p = pending.front();
      for (auto& v : p.second.variables())
        if (!known.count(v) && !std::any_of(pending.begin(), pending.end(), [&](auto& q) { return q.first == v; }))
          r.fail(where[p.first], "var '" + p.first + "' uses unknown name '" + v + "'");
      r.fail(where[p.first], "vars form a cycle through '" + p.first + "'");
    }
    known.insert(ready->first);
    done.push_back(*ready);
    pending.erase(ready);
  }
  return done;
}

void check_names(const Reader& r, const std::set<std::string>& known, const Expr& e,
                 const std::string& what, int line) {
  for (auto& v : e.variables())
    if (!known.count(v)) {
      std::string list;
      for (auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw SpecError(r.path() + ":" + std::to_string(line) + ": " + what + " uses unknown name '" + v +
                      "'; known: " + list + " (add it under [vars] or [sizes])");
    }
}

int line_of(const toml::node& n) { return static_cast<int>(n.source().begin.line); }

// slug, id, stem, category, origin, description.
void read_identity(const Reader& r, const toml::table& root, ProblemSpec& s) {
  s.slug = r.str(r.need(root, "slug", "the top level", "slug = \"tp_gemm_allgather\""), "slug");
  std::string file = s.path.substr(s.path.find_last_of('/') + 1);
  if (file != s.slug + ".toml")
    r.fail(root.get("slug"), "slug '" + s.slug + "' does not match the file name " + file + "; rename one");
  s.id = static_cast<int>(r.integer(r.need(root, "id", "the top level", "id = 14 (the original's number)"), "id"));
  s.stem = r.str(r.need(root, "stem", "the top level", "stem = \"14_gemm_allgather\""), "stem");
  const toml::node& cat = r.need(root, "category", "the top level", "category = \"tp\"");
  s.category = r.str(cat, "category");
  if (category_name(s.category).empty()) {
    std::string list;
    for (auto& c : kCategories) list += (list.empty() ? "" : ", ") + c.first;
    r.fail(cat, "unknown category '" + s.category + "'; use one of " + list);
  }
  if (s.slug.rfind(s.category + "_", 0) != 0)
    r.fail(root.get("slug"), "slug '" + s.slug + "' must start with its category '" + s.category + "_'");
  s.origin = r.str(r.need(root, "origin", "the top level", "origin = \"Megatron-LM ...\""), "origin");
  s.description = r.str(r.need(root, "description", "the top level", "description = \"...\""), "description");
}

// dtype, world, timeout.
void read_run(const Reader& r, const toml::table& root, ProblemSpec& s) {
  if (auto* d = root.get("dtype")) {
    s.dtype = r.str(*d, "dtype");
    if (!is_dtype_name(s.dtype)) r.fail(d, "unknown dtype '" + s.dtype + "'; use one of " + dtype_names());
  }
  if (auto* w = root.get("world")) {
    const toml::table* wt = w->as_table();
    if (!wt) r.fail(w, "world must be a table, e.g. world = { min = 2, max = 8 }");
    r.only_keys(*wt, {"min", "max"}, "world");
    if (auto* mn = wt->get("min")) s.min_world = static_cast<int>(r.integer(*mn, "world.min"));
    if (auto* mx = wt->get("max")) s.max_world = static_cast<int>(r.integer(*mx, "world.max"));
    if (s.min_world < 1 || s.max_world < s.min_world) r.fail(w, "world needs 1 <= min <= max");
  }
  if (auto* t = root.get("timeout")) s.trial_timeout_s = r.real(*t, "timeout");
}

// [sizes]: every size names the same variables. Returns them with W and rank: the names
// formulas may use so far.
std::set<std::string> read_sizes(const Reader& r, const toml::table& root, ProblemSpec& s) {
  const toml::node& sz = r.need(root, "sizes", "the top level", "[sizes] default = { M = 1024, N = 1024 }");
  const toml::table* szt = sz.as_table();
  if (!szt || !szt->get("default")) r.fail(sz, "[sizes] needs a 'default' size, e.g. default = { M = 1024, N = 1024 }");
  std::set<std::string> size_names;
  for (auto&& [name, v] : *szt) {
    std::string size(name.str());
    const toml::table* p = v.as_table();
    if (!p) r.fail(v, "size '" + size + "' must be a table of integers");
    std::map<std::string, int64_t> vals;
    for (auto&& [k, x] : *p) vals[std::string(k.str())] = r.integer(x, "size " + std::string(k.str()));
    std::set<std::string> names;
    for (auto& [k, x] : vals) names.insert(k);
    if (size_names.empty()) size_names = names;
    else if (names != size_names)
      r.fail(v, "size '" + size + "' names other sizes than the others; give every size the same keys");
    s.sizes[size] = vals;
  }
  for (auto& a : {"W", "rank"})
    if (size_names.count(a)) r.fail(sz, std::string("sizes must not be called ") + a);
  size_names.insert({"W", "rank"});
  return size_names;
}

void read_vars(const Reader& r, const toml::table& root, ProblemSpec& s, std::set<std::string>& known) {
  const toml::node* v = root.get("vars");
  if (!v) return;
  const toml::table* vt = v->as_table();
  if (!vt) r.fail(v, "[vars] must be a table of formulas");
  s.vars = order_vars(r, *vt, known);
  for (auto& [name, e] : s.vars) known.insert(name);
}

void read_constraints(const Reader& r, const toml::table& root, ProblemSpec& s, const std::set<std::string>& known) {
  const toml::node* c = root.get("constraints");
  if (!c) return;
  const toml::array* ca = c->as_array();
  if (!ca) r.fail(c, "constraints must be an array of formulas, e.g. [\"N % W == 0\"]");
  for (auto&& e : *ca) {
    Expr ex = r.formula(e, "constraint");
    check_names(r, known, ex, "constraint \"" + ex.text() + "\"", line_of(e));
    s.constraints.push_back(ex);
  }
}

std::vector<TensorSpec> read_tensors(const Reader& r, const toml::table& root, const char* key,
                                     const std::set<std::string>& known) {
  bool is_input = std::string(key) == "inputs";
  std::vector<TensorSpec> out;
  const toml::node* n = root.get(key);
  if (!n) return out;
  const toml::array* a = n->as_array();
  if (!a) r.fail(n, std::string(key) + " must be an array of tables, written [[" + key + "]]");
  std::set<std::string> seen;
  for (auto&& e : *a) {
    TensorSpec ts = read_tensor(r, e, is_input);
    if (!seen.insert(ts.name).second) r.fail(e, "two " + std::string(key) + " are called '" + ts.name + "'");
    for (auto& d : ts.shape) check_names(r, known, d.size, std::string(key) + " '" + ts.name + "' shape", ts.line);
    if (is_input && ts.init.is_call())
      for (auto& arg : ts.init.call_args()) check_names(r, known, arg, "input '" + ts.name + "' init", ts.line);
    out.push_back(ts);
  }
  return out;
}

void read_args(const Reader& r, const toml::table& root, ProblemSpec& s, const std::set<std::string>& known) {
  const toml::node* a = root.get("args");
  if (!a) return;
  const toml::table* at = a->as_table();
  if (!at) r.fail(a, "[args] must be a table of values");
  for (auto&& [k, v] : *at) {
    std::string name(k.str());
    if (known.count(name)) r.fail(v, "arg '" + name + "' clashes with a size or var of the same name");
    s.args.push_back(read_arg(r, name, v));
  }
}

void read_roofline(const Reader& r, const toml::table& root, ProblemSpec& s, std::set<std::string> known) {
  const toml::node* rl = root.get("roofline");
  if (!rl) return;
  const toml::table* rt = rl->as_table();
  if (!rt) r.fail(rl, "[roofline] must be a table of formulas");
  r.only_keys(*rt, {"nvlink_bytes", "hbm_bytes", "flops", "data_bytes", "bus_factor"}, "[roofline]");
  known.insert("dt_bytes");
  auto get = [&](const char* key, Expr& out) {
    if (auto* n = rt->get(key)) {
      out = r.formula(*n, std::string("roofline ") + key);
      check_names(r, known, out, std::string("roofline ") + key, line_of(*n));
    }
  };
  get("nvlink_bytes", s.roofline.nvlink_bytes);
  get("hbm_bytes", s.roofline.hbm_bytes);
  get("flops", s.roofline.flops);
  get("data_bytes", s.roofline.data_bytes);
  get("bus_factor", s.roofline.bus_factor);
  if (s.roofline.data_bytes.empty() != s.roofline.bus_factor.empty())
    r.fail(rl, "[roofline] data_bytes and bus_factor go together (bus bandwidth needs both)");
}

void read_memory(const Reader& r, const toml::table& root, ProblemSpec& s, std::set<std::string> known) {
  const toml::node* m = root.get("memory");
  if (!m) return;
  const toml::table* mt = m->as_table();
  if (!mt) r.fail(m, "[memory] must be a table of formulas");
  r.only_keys(*mt, {"reference_peak"}, "[memory]");
  known.insert("dt_bytes");
  if (auto* n = mt->get("reference_peak")) {
    s.reference_peak = r.formula(*n, "memory reference_peak");
    check_names(r, known, s.reference_peak, "memory reference_peak", line_of(*n));
  }
}

// The names an [original] argument expression mentions, other than its keywords and what
// stands inside quotes: each must be an input, an [args] value, a size or a var.
std::vector<std::string> original_names(const std::string& e) {
  static const std::set<std::string> kKeywords = {"None",   "True", "False", "WORLD", "for", "in",  "list",
                                                  "item",   "unbind", "size", "range", "len", "sum", "min",
                                                  "max",    "int",  "float"};
  std::vector<std::string> names;
  std::set<std::string> local;  // a comprehension's variables
  std::string last;
  for (size_t i = 0; i < e.size();) {
    char c = e[i];
    if (c == '\'' || c == '"') {
      size_t j = e.find(c, i + 1);
      i = j == std::string::npos ? e.size() : j + 1;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < e.size() && (std::isalnum(static_cast<unsigned char>(e[j])) || e[j] == '_')) ++j;
      std::string w = e.substr(i, j - i);
      bool method = i > 0 && e[e.find_last_not_of(' ', i - 1)] == '.';
      if (last == "for") local.insert(w);
      else if (!method && !kKeywords.count(w)) names.push_back(w);
      last = w;
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {  // a number, exponent included
      while (i < e.size() && (std::isalnum(static_cast<unsigned char>(e[i])) || e[i] == '.')) ++i;
    } else {
      ++i;
    }
  }
  std::vector<std::string> out;
  for (auto& n : names)
    if (!local.count(n)) out.push_back(n);
  return out;
}

// [original]: args (expressions over the inputs, args, sizes and vars), returns (output
// names), unsupported (a reason).
void read_original(const Reader& r, const toml::table& root, ProblemSpec& s, std::set<std::string> known) {
  const toml::table* t = r.table(root, "original", "the top level");
  if (!t) return;
  r.only_keys(*t, {"args", "returns", "unsupported"}, "[original]");
  s.original.declared = true;
  s.original.unsupported = r.str(*t, "unsupported", "[original]", false);
  for (auto& in : s.inputs) known.insert(in.name);
  for (auto& a : s.args) known.insert(a.name);
  if (s.original.unsupported.empty()) {
    r.need(*t, "args", "[original]", "args = [\"x\"] (the original's solution arguments, in order)");
    s.original.args = r.strings(*t, "args", "[original]");
  } else if (t->get("args")) {
    s.original.args = r.strings(*t, "args", "[original]");
  }
  for (auto& e : s.original.args) {
    if (e.find_first_not_of(' ') == std::string::npos) r.fail(t->get("args"), "[original] args: an empty argument");
    for (auto& n : original_names(e))
      if (!known.count(n))
        r.fail(t->get("args"), "[original] args: '" + e + "' uses unknown name '" + n +
                                   "'; use an input, an [args] value, a size or a var "
                                   "(docs/problem-spec.md, [original])");
  }
  if (t->get("returns")) {
    s.original.returns = r.strings(*t, "returns", "[original]");
    std::set<std::string> seen;
    for (auto& o : s.original.returns) {
      if (o == "_") continue;
      if (!s.output(o)) r.fail(t->get("returns"), "[original] returns: no output is called '" + o + "'");
      if (!seen.insert(o).second) r.fail(t->get("returns"), "[original] returns: '" + o + "' twice");
    }
    if (seen.size() != s.outputs.size())
      r.fail(t->get("returns"), "[original] returns must name every output once (\"_\" for a value pkb drops)");
  } else {
    for (auto& o : s.outputs) s.original.returns.push_back(o.name);
  }
}

// Every size must give whole-number shapes at every world size up to 8 it allows.
void check_whole_shapes(const ProblemSpec& s) {
  for (auto& [size, vals] : s.sizes) {
    for (int w = s.min_world; w <= std::min(s.max_world, 8); ++w) {
      try {
        if (!s.world_size_error(w, size).empty()) continue;
        for (int rank = 0; rank < w; ++rank) {
          Vars vars = s.vars_for(size, w, rank);
          for (auto* list : {&s.inputs, &s.outputs})
            for (auto& t : *list)
              for (auto& d : t.shape) d.size.eval_int(vars);
        }
      } catch (const ExprError& e) {
        throw SpecError(s.path + ": sizes '" + size + "' at W=" + std::to_string(w) + ": " + e.what() +
                        "; add a constraint or fix the formula");
      }
    }
  }
}

ProblemSpec read_spec(const std::string& path);

}  // namespace

ProblemSpec load_spec(const std::string& path) {
  try {
    return read_spec(path);
  } catch (const SpecError&) {
    throw;
  } catch (const io::InputError& e) {  // the TOML reader's: the same line, as a spec error
    throw SpecError(e.what());
  }
}

namespace {

ProblemSpec read_spec(const std::string& path) {
  Reader r(path);
  const toml::table& root = r.doc();
  r.only_keys(root, kTopKeys, "the top level");
  ProblemSpec s;
  s.path = path;
  read_identity(r, root, s);
  read_run(r, root, s);
  std::set<std::string> known = read_sizes(r, root, s);
  read_vars(r, root, s, known);
  read_constraints(r, root, s, known);
  s.inputs = read_tensors(r, root, "inputs", known);
  s.outputs = read_tensors(r, root, "outputs", known);
  if (s.outputs.empty()) r.fail(root, "a problem needs at least one [[outputs]] entry");
  read_args(r, root, s, known);
  read_roofline(r, root, s, known);
  read_memory(r, root, s, known);
  read_original(r, root, s, known);
  check_whole_shapes(s);
  return s;
}

}  // namespace

const TensorSpec* ProblemSpec::input(const std::string& name) const {
  for (auto& t : inputs)
    if (t.name == name) return &t;
  return nullptr;
}

const TensorSpec* ProblemSpec::output(const std::string& name) const {
  for (auto& t : outputs)
    if (t.name == name) return &t;
  return nullptr;
}

std::map<std::string, int64_t> ProblemSpec::size_values(const std::string& size) const {
  size_t colon = size.find(':');
  bool only_overrides = colon == std::string::npos && size.find('=') != std::string::npos;
  std::string base = only_overrides ? "default" : size.substr(0, colon);
  auto it = sizes.find(base);
  if (it == sizes.end()) {
    std::string list;
    for (auto& [k, v] : sizes) list += (list.empty() ? "" : ", ") + k;
    throw SpecError(slug + ": no size '" + base + "'; this problem has " + list +
                    " (or replace sizes: NAME=VALUE,... or PRESET:NAME=VALUE,...)");
  }
  std::map<std::string, int64_t> values = it->second;
  std::string overrides = only_overrides ? size : colon == std::string::npos ? "" : size.substr(colon + 1);
  std::istringstream items(overrides);
  for (std::string item; std::getline(items, item, ',');) {
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq);
    if (eq == std::string::npos || !values.count(name)) {
      std::string list;
      for (auto& [k, v] : values) list += (list.empty() ? "" : ", ") + k;
      throw SpecError(slug + ": '" + item + "' in size '" + size + "' must be NAME=VALUE with NAME one of " + list);
    }
    std::string text = item.substr(eq + 1);
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(text, &used);
    } catch (const std::exception&) {
    }
    if (text.empty() || used != text.size() || value <= 0)
      throw SpecError(slug + ": size " + name + " must be a positive integer, not '" + text + "'");
    values[name] = value;
  }
  return values;
}

Vars ProblemSpec::vars_for(const std::string& size, int world, int rank) const {
  Vars v;
  for (auto& [k, x] : size_values(size)) v[k] = static_cast<double>(x);
  v["W"] = world;
  return vars_at_rank(std::move(v), rank);
}

Vars ProblemSpec::vars_at_rank(Vars v, int rank) const {
  v["rank"] = rank;
  for (auto& [name, e] : vars) v[name] = e.eval(v);
  return v;
}

Vars ProblemSpec::roofline_vars(const std::string& size, int world, int rank, const std::string& dtype) const {
  Vars v = vars_for(size, world, rank);
  v["dt_bytes"] = dtype_size(dtype_from_name(dtype.empty() ? this->dtype : dtype));
  return v;
}

std::string ProblemSpec::world_size_error(int world, const std::string& size) const {
  if (world < min_world || world > max_world)
    return slug + " runs with " + std::to_string(min_world) + " to " + std::to_string(max_world) +
           " ranks, not " + std::to_string(world);
  Vars v = vars_for(size, world, 0);
  for (auto& c : constraints)
    if (c.eval(v) == 0)
      return slug + " needs " + c.text() + ", which fails at W=" + std::to_string(world) + " with sizes '" +
             size + "'";
  return "";
}

std::string ProblemSpec::world_size_summary() const {
  std::string s = std::to_string(min_world) + ".." + std::to_string(max_world);
  for (auto& c : constraints) s += ", " + c.text();
  return s;
}

std::string category_name(const std::string& key) {
  for (auto& [k, name] : kCategories)
    if (k == key) return name;
  return "";
}

const std::vector<std::string>& category_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (auto& c : kCategories) k.push_back(c.first);
    return k;
  }();
  return keys;
}

std::vector<int64_t> shape_of(const TensorSpec& t, const Vars& vars) {
  std::vector<int64_t> shape;
  for (auto& d : t.shape) {
    int64_t n = d.size.eval_int(vars);
    if (n < 0) throw std::invalid_argument("'" + t.name + "' has a negative size: " + d.size.text() + " = " + std::to_string(n));
    shape.push_back(n);
  }
  return shape;
}

DType dtype_of(const TensorSpec& t, const std::string& dt) { return dtype_from_name(t.dtype == "dt" ? dt : t.dtype); }

size_t bytes_of(const TensorSpec& t, const Vars& vars, const std::string& dt) {
  size_t n = static_cast<size_t>(dtype_size(dtype_of(t, dt)));
  for (int64_t d : shape_of(t, vars)) n *= static_cast<size_t>(d);
  return n;
}

}  // namespace pkb::spec
