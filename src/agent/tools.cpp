#include "agent/tools.hpp"

#include <filesystem>
#include <sstream>

#include "eval/eval_command.hpp"
#include "io/files.hpp"

namespace pkb::agent {

namespace fs = std::filesystem;

namespace {

std::string number(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

std::vector<std::string> common(const EvalSettings& s, const char* command, const std::string& problem, int world) {
  std::vector<std::string> a = {s.pkb};
  a.insert(a.end(), s.global_args.begin(), s.global_args.end());
  a.insert(a.end(), {command, "--problem", problem, "--world-size", std::to_string(world), "--device", s.device,
                     "--size", s.settings.size});
  if (!s.settings.dtype.empty()) a.insert(a.end(), {"--dtype", s.settings.dtype});
  if (s.timeout > 0) a.insert(a.end(), {"--timeout", number(s.timeout)});
  return a;
}

std::string relative(const std::string& path, const std::string& root) {
  std::error_code ec;
  fs::path rel = fs::relative(fs::weakly_canonical(path, ec), fs::weakly_canonical(root, ec), ec);
  return ec || rel.empty() || *rel.begin() == ".." ? fs::path(path).filename().string() : rel.string();
}

}  // namespace

std::vector<std::string> eval_argv(const EvalSettings& s, const std::string& problem, int world,
                                   const std::string& candidate, const std::string& json_out) {
  eval::EvalCommand c;
  c.pkb = s.pkb;
  c.global_args = s.global_args;
  c.problem = problem;
  c.solution = candidate;
  c.world = world;
  c.device = s.device;
  c.settings = s.settings;
  c.timeout = s.timeout;
  c.json_out = json_out;
  return c.argv();
}

std::vector<std::string> dryrun_argv(const EvalSettings& s, const std::string& problem, int world) {
  return common(s, "dryrun", problem, world);
}

std::string show_text(const spec::Registry& registry, const spec::ProblemSpec& s, const std::string& root) {
  std::string src = registry.reference_source(s);
  return "# " + s.slug + "  (id " + std::to_string(s.id) + ", " + s.stem + "; " + spec::category_name(s.category) +
         ")\n# " + relative(s.path, root) + "\n\n" + io::read_file(s.path) + "\n# reference: " + relative(src, root) +
         "\n\n" + io::read_file(src);
}

std::string shapes_text(const launch::ProcessResult& r) {
  std::istringstream in(r.out);
  std::string line, out;
  bool table = false;
  while (std::getline(in, line)) {
    if (line.rfind("rank ", 0) == 0 && line.find("outputs") != std::string::npos) {
      table = true;
      continue;
    }
    if (!table) continue;
    std::istringstream cells(line);
    std::string rank, ms, outputs;
    if (!(cells >> rank >> ms) || rank.find_first_not_of("0123456789") != std::string::npos) break;
    std::getline(cells, outputs);
    outputs.erase(0, outputs.find_first_not_of(' '));
    out += "rank " + rank + ": " + outputs + "\n";
  }
  if (!out.empty()) return out;
  // The reference itself failed: say so in pkb's words, without the header (its seed).
  std::string last;
  std::istringstream err(r.err);
  while (std::getline(err, line))
    if (line.find_first_not_of(" \t") != std::string::npos && last.empty()) last = line;
  return "pkb could not run the reference" + (last.empty() ? std::string(".") : ": " + last) + "\n";
}

}  // namespace pkb::agent
