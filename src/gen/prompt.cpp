#include "gen/prompt.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gen/error.hpp"
#include "gen/template.hpp"
#include "io/toml_reader.hpp"
#include "io/files.hpp"

namespace pkb::gen {

namespace fs = std::filesystem;

namespace {

// Placeholders every template may use, whatever the backend.
const std::set<std::string> kCommon = {"backend", "backend_name", "language", "extension", "problem",
                                       "problem_facts", "reference_path", "reference_source", "world", "size",
                                       "dtype", "output_file", "shots", "original_call"};
// Blocks assembled from other templates; available to components and the system prompt.
const std::set<std::string> kBlocks = {"hardware", "precision_note", "examples", "backend_notes"};
// Each in-context pair's values, for the [examples] entry.
const std::set<std::string> kExampleKeys = {"example_number", "example_problem", "example_interface",
                                            "example_reference_path", "example_reference",
                                            "example_candidate_path", "example_candidate"};

std::set<std::string> plus(std::set<std::string> a, const std::set<std::string>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

std::set<std::string> keys_of(const std::map<std::string, std::string>& m) {
  std::set<std::string> k;
  for (auto& kv : m) k.insert(kv.first);
  return k;
}

std::string trim_lines(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  a = s.rfind('\n', a);
  a = a == std::string::npos ? 0 : a + 1;
  return s.substr(a, s.find_last_not_of(" \t\r\n") + 1 - a);
}

std::string under_root(const std::string& root, const std::string& path) {
  return fs::path(path).is_absolute() ? path : (fs::path(root) / path).string();
}

// `path` relative to `root` when it lies under it, for quoting in prompts.
std::string shown_path(const std::string& root, const std::string& path) {
  std::error_code ec;
  fs::path rel = fs::relative(fs::weakly_canonical(path, ec), fs::weakly_canonical(root, ec), ec);
  return ec || rel.empty() || *rel.begin() == ".." ? path : rel.string();
}

// The templates a backend renders: the shared ones with the backend's overrides.
std::map<std::string, std::string> effective_templates(const PromptBook& book, const Backend& b) {
  std::map<std::string, std::string> t = book.templates;
  for (auto& [k, v] : b.templates) t[k] = v;
  return t;
}

std::set<std::string> common_for(const PromptBook& book, const Backend& b) {
  return plus(plus(kCommon, keys_of(book.files)), keys_of(b.files));
}

void check_book(const PromptBook& book, const std::set<std::string>& hw_keys) {
  const std::string& f = book.path;
  for (auto& [key, b] : book.backends) {
    std::string where = f + " [backends." + key + "]";
    std::set<std::string> common = common_for(book, b);
    auto templates = effective_templates(book, b);
    for (auto& [name, text] : templates)
      check_placeholders(text, plus(common, kBlocks), where + " template '" + name + "'");
    check_placeholders(b.system, plus(common, kBlocks), where + " system");
    check_placeholders(b.notes, plus(common, {"hardware", "precision_note"}), where + " notes");
    check_placeholders(book.hardware_template, plus(common, hw_keys), f + " [hardware] template");
    check_placeholders(b.hardware_template, plus(common, hw_keys), where + " hardware_template");
    for (auto& [dtype, note] : b.precision_notes)
      check_placeholders(note, common, where + " precision." + dtype);
    check_placeholders(book.example_entry,
                       plus(plus(common, kExampleKeys), {"hardware", "precision_note", "backend_notes"}),
                       f + " [examples] entry");
    for (auto* intro : {&book.example_one, &book.example_many})
      check_placeholders(*intro, plus(common, {"example_count"}), f + " [examples] intro");
    for (auto& [dtype, note] : book.precision_notes)
      check_placeholders(note, common, f + " [precision." + dtype + "] note");
    for (auto& [shot, opt] : book.shots)
      for (auto& c : opt.components)
        if (!templates.count(c) && !kBlocks.count(c) && !common.count(c))
          throw GenError(f + " [shots." + shot + "] lists component '" + c +
                         "', which is neither a [templates] entry nor a placeholder");
  }
}

// The in-context pairs `shots` asks for, never the problem being asked, introduced.
std::string examples_block(const PromptBook& book, const Backend& b, const spec::Registry& registry,
                           const PromptRequest& req, const ShotOption& shots, const std::string& shot_name,
                           const Context& ctx) {
  std::vector<const ExamplePair*> pairs;
  for (auto& e : b.examples)
    if (e.problem != req.problem->slug && static_cast<int>(pairs.size()) < shots.examples) pairs.push_back(&e);
  if (static_cast<int>(pairs.size()) < shots.examples)
    throw GenError(shot_name + " needs " + std::to_string(shots.examples) + " example(s) for backend " + b.key +
                   " besides " + req.problem->slug + ", but " + book.path + " has " + std::to_string(pairs.size()) +
                   "; add [[backends." + b.key + ".examples]] or use --shots zero_shot");
  std::string examples;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const ExamplePair& e = *pairs[i];
    std::string where = book.path + " [[backends." + b.key + ".examples]] " + e.problem;
    const spec::ProblemSpec* es = nullptr;
    try {
      es = &registry.find(e.problem);
    } catch (const spec::SpecError& err) {
      throw GenError(where + ": " + err.what());
    }
    std::string cand = under_root(req.root, e.candidate);
    if (!fs::is_regular_file(cand))
      throw GenError(where + ": candidate " + e.candidate + " does not exist; write it, or use --shots zero_shot");
    Context ex = ctx;
    std::string eref = registry.reference_source(*es);
    ex["example_number"] = std::to_string(i + 1);
    ex["example_problem"] = es->slug;
    ex["example_interface"] = interface_summary(*es);
    ex["example_reference_path"] = shown_path(req.root, eref);
    ex["example_reference"] = trim_lines(io::read_file(eref));
    ex["example_candidate_path"] = shown_path(req.root, cand);
    ex["example_candidate"] = trim_lines(io::read_file(cand));
    examples += "\n\n" + trim_lines(render(book.example_entry, ex, book.path + " [examples] entry"));
  }
  if (!pairs.empty()) {
    Context intro = ctx;
    intro["example_count"] = std::to_string(pairs.size());
    examples = trim_lines(render(pairs.size() == 1 ? book.example_one : book.example_many, intro,
                                 book.path + " [examples] intro")) +
               examples;
  }
  return examples;
}

}  // namespace

PromptBook PromptBook::load(const std::string& path, const std::vector<spec::HardwareProfile>& profiles) {
  io::TomlReader r(path);
  const toml::table& doc = r.doc();
  r.only_keys(doc,
              {"defaults", "templates", "files", "hardware", "examples", "precision", "backends", "shots", "agent"},
              "the top level");
  PromptBook book;
  book.path = path;
  if (auto* d = r.table(doc, "defaults", "")) {
    r.only_keys(*d, {"backend", "hardware"}, "[defaults]");
    book.default_backend = r.str(*d, "backend", "[defaults]", false, "cuda");
    book.default_hardware = r.str(*d, "hardware", "[defaults]", false, "none");
  }
  if (auto* t = r.table(doc, "templates", "")) book.templates = r.string_table(*t, "[templates]");
  if (auto* t = r.table(doc, "files", "")) book.files = r.string_table(*t, "[files]");
  if (auto* t = r.table(doc, "agent", "")) book.agent = r.string_table(*t, "[agent]");  // checked by pkb agent
  if (auto* t = r.table(doc, "hardware", "")) {
    r.only_keys(*t, {"template"}, "[hardware]");
    book.hardware_template = r.str(*t, "template", "[hardware]", true);
  }
  if (auto* t = r.table(doc, "examples", "")) {
    r.only_keys(*t, {"one", "many", "entry"}, "[examples]");
    book.example_one = r.str(*t, "one", "[examples]", true);
    book.example_many = r.str(*t, "many", "[examples]", true);
    book.example_entry = r.str(*t, "entry", "[examples]", true);
  }
  if (auto* t = r.table(doc, "precision", "")) {
    for (auto& [k, v] : *t) {
      std::string where = "[precision." + std::string(k.str()) + "]";
      if (!v.is_table()) r.fail(v, where + " must be a table");
      r.only_keys(*v.as_table(), {"note"}, where);
      book.precision_notes[std::string(k.str())] = r.str(*v.as_table(), "note", where, true);
    }
  }
  const toml::table* backends = r.table(doc, "backends", "");
  if (!backends || backends->empty()) throw GenError(path + ": no [backends.<name>] sections");
  for (auto& [k, v] : *backends) {
    Backend b;
    b.key = std::string(k.str());
    std::string where = "[backends." + b.key + "]";
    if (!v.is_table()) r.fail(v, where + " must be a table");
    const toml::table& t = *v.as_table();
    r.only_keys(t,
                {"name", "tags", "extension", "shots", "system", "notes", "templates", "files", "examples", "device",
                 "hardware", "world_size", "hardware_template", "precision", "format"},
                where);
    b.name = r.str(t, "name", where, true);
    b.tags = r.strings(t, "tags", where);
    if (b.tags.empty()) r.fail(t, where + " needs tags = [\"<fence tag>\", ...] (the first is asked for)");
    b.extension = r.str(t, "extension", where, true);
    b.shots = r.str(t, "shots", where, false, "zero_shot");
    b.system = r.str(t, "system", where, true);
    b.notes = r.str(t, "notes", where, false);
    if (auto* tt = r.table(t, "templates", where)) b.templates = r.string_table(*tt, where + ".templates");
    if (auto* ft = r.table(t, "files", where)) b.files = r.string_table(*ft, where + ".files");
    b.device = r.str(t, "device", where, false, "cuda");
    b.format = r.str(t, "format", where, false, "pkb");
    if (b.format != "pkb" && b.format != "original") r.fail(*t.get("format"), where + ".format must be pkb or original");
    if (b.device != "cuda" && b.device != "cpu") r.fail(*t.get("device"), where + ".device must be cuda or cpu");
    b.hardware = r.str(t, "hardware", where, false);
    b.world = static_cast<int>(r.count(t, "world_size", where, 0));
    b.hardware_template = r.str(t, "hardware_template", where, false);
    if (auto* pt = r.table(t, "precision", where)) b.precision_notes = r.string_table(*pt, where + ".precision");
    if (const toml::node* ex = t.get("examples")) {
      const toml::array* a = ex->as_array();
      if (!a) r.fail(*ex, where + ".examples must be [[backends." + b.key + ".examples]] tables");
      for (auto& e : *a) {
        if (!e.is_table()) r.fail(e, where + ".examples must be tables of problem and candidate");
        r.only_keys(*e.as_table(), {"problem", "candidate"}, where + ".examples");
        b.examples.push_back({r.str(*e.as_table(), "problem", where + ".examples", true),
                              r.str(*e.as_table(), "candidate", where + ".examples", true)});
      }
    }
    book.backends[b.key] = b;
  }
  const toml::table* shots = r.table(doc, "shots", "");
  if (!shots || shots->empty()) throw GenError(path + ": no [shots.<name>] options");
  for (auto& [k, v] : *shots) {
    std::string where = "[shots." + std::string(k.str()) + "]";
    if (!v.is_table()) r.fail(v, where + " must be a table");
    r.only_keys(*v.as_table(), {"components", "examples"}, where);
    ShotOption o;
    o.components = r.strings(*v.as_table(), "components", where);
    o.examples = static_cast<int>(r.count(*v.as_table(), "examples", where, 0));
    if (o.components.empty()) r.fail(v, where + " needs components = [...]");
    book.shots[std::string(k.str())] = o;
  }
  if (!book.backends.count(book.default_backend))
    throw GenError(path + ": [defaults] backend '" + book.default_backend + "' has no [backends." +
                   book.default_backend + "]");
  for (auto& [key, b] : book.backends)
    if (!book.shots.count(b.shots))
      throw GenError(path + ": [backends." + key + "] shots = '" + b.shots + "' has no [shots." + b.shots + "]");

  check_book(book, profile_placeholders(profiles));
  return book;
}

namespace {

// m[key], or an error naming what the book has.
template <class Map>
const typename Map::mapped_type& entry(const Map& m, const std::string& key, const std::string& what,
                                       const std::string& path) {
  auto it = m.find(key);
  if (it != m.end()) return it->second;
  std::string list;
  for (auto& kv : m) list += (list.empty() ? "" : ", ") + kv.first;
  throw GenError("unknown " + what + " '" + key + "'; " + path + " has " + list);
}

}  // namespace

const Backend& PromptBook::backend(const std::string& key) const { return entry(backends, key, "backend", path); }

const ShotOption& PromptBook::shot_option(const std::string& name) const {
  return entry(shots, name, "shot option", path);
}

Prompt assemble_prompt(const PromptBook& book, const spec::Registry& registry, const PromptRequest& req) {
  const spec::ProblemSpec& s = *req.problem;
  const Backend& b = book.backend(req.backend.empty() ? book.default_backend : req.backend);
  Setting setting = req.setting;
  setting.device = b.device;
  std::string shot_name = req.shots.empty() ? b.shots : req.shots;
  const ShotOption& shots = book.shot_option(shot_name);
  if (b.format == "original" && (!s.original.declared || !s.original.unsupported.empty()))
    throw GenError("backend " + b.key + " asks for the original ParallelKernelBench's format, which pkb cannot run for " +
                   s.slug + ": " +
                   (s.original.declared ? s.original.unsupported : "its spec has no [original] table"));

  Context ctx = {{"backend", b.key},
                 {"backend_name", b.name},
                 {"language", b.tags[0]},
                 {"extension", b.extension},
                 {"problem", s.slug},
                 {"problem_facts", trim_lines(problem_facts(s, setting))},
                 {"world", std::to_string(setting.world)},
                 {"size", setting.size},
                 {"dtype", element_type(s, setting)},
                 {"output_file", s.slug + "." + b.extension},
                 {"shots", shot_name},
                 {"original_call", original_call(s)}};
  std::string ref = registry.reference_source(s);
  ctx["reference_path"] = shown_path(req.root, ref);
  ctx["reference_source"] = trim_lines(io::read_file(ref));
  auto quote_files = [&](const std::map<std::string, std::string>& files, const std::string& section) {
    for (auto& [name, rel] : files) {
      std::string full = under_root(req.root, rel);
      if (!fs::is_regular_file(full))
        throw GenError(book.path + " " + section + " " + name + ": " + rel + " does not exist under " + req.root);
      ctx[name] = trim_lines(io::read_file(full));
    }
  };
  quote_files(book.files, "[files]");
  quote_files(b.files, "[backends." + b.key + ".files]");

  // The backend's own note for the dtype, else the shared one.
  const std::string* note = nullptr;
  if (auto own = b.precision_notes.find(ctx["dtype"]); own != b.precision_notes.end()) note = &own->second;
  else if (auto shared = book.precision_notes.find(ctx["dtype"]); shared != book.precision_notes.end()) note = &shared->second;
  ctx["precision_note"] = note ? trim_lines(render(*note, ctx, book.path + " precision note " + ctx["dtype"])) : "";
  if (req.hardware) {
    Context hw = ctx;
    for (auto& [k, v] : profile_values(*req.hardware)) hw[k] = v;
    hw["hw_detected"] = req.detected;
    const std::string& tmpl = b.hardware_template.empty() ? book.hardware_template : b.hardware_template;
    ctx["hardware"] = trim_lines(render(tmpl, hw, book.path + " hardware template"));
  } else {
    ctx["hardware"] = "";
  }
  ctx["backend_notes"] = trim_lines(render(b.notes, ctx, book.path + " [backends." + b.key + "] notes"));

  ctx["examples"] = examples_block(book, b, registry, req, shots, shot_name, ctx);

  auto templates = effective_templates(book, b);
  Prompt p;
  for (auto& c : shots.components) {
    auto t = templates.find(c);
    std::string part = t != templates.end() ? render(t->second, ctx, book.path + " template '" + c + "'") : ctx.at(c);
    part = trim_lines(part);
    if (!part.empty()) p.user += (p.user.empty() ? "" : "\n\n") + part;
  }
  p.user += "\n";
  p.system = trim_lines(render(b.system, ctx, book.path + " [backends." + b.key + "] system")) + "\n";
  return p;
}

}  // namespace pkb::gen
