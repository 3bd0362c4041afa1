#include "spec/registry.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "io/text.hpp"

namespace pkb::spec {

namespace fs = std::filesystem;

Registry Registry::load(const std::vector<std::string>& problem_dirs, const std::vector<std::string>& reference_slugs) {
  Registry reg;
  std::map<std::string, std::string> by_id, by_stem, by_slug;
  std::set<std::string> compiled(reference_slugs.begin(), reference_slugs.end());
  for (auto& dir : problem_dirs) {
    if (!fs::is_directory(dir)) throw SpecError(dir + ": no such problem folder");
    std::vector<fs::path> files;
    for (auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".toml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      ProblemSpec s = load_spec(f.string());
      auto clash = [&](std::map<std::string, std::string>& m, const std::string& key, const char* what) {
        auto [it, fresh] = m.emplace(key, s.path);
        if (!fresh) throw SpecError(s.path + ": " + what + " " + key + " is already used by " + it->second);
      };
      clash(by_slug, s.slug, "slug");
      clash(by_id, std::to_string(s.id), "id");
      clash(by_stem, s.stem, "stem");
      std::string src;
      for (auto& cand : {fs::path(dir) / ".." / "reference" / (s.slug + ".cpp"), fs::path(dir) / (s.slug + ".cpp"),
                         fs::path(dir) / "references.cpp"})
        if (src.empty() && fs::exists(cand)) src = fs::weakly_canonical(cand).string();
      if (src.empty())
        throw SpecError(s.path + ": no reference source; write reference/" + s.slug + ".cpp (or remove the spec)");
      if (!compiled.count(s.slug))
        throw SpecError(s.path + ": reference " + src + " is not compiled into pkb; rebuild (cmake --build) or pass --reference-lib");
      reg.specs_.push_back(std::move(s));
      reg.sources_.push_back(src);
    }
  }
  for (auto& slug : reference_slugs)
    if (!by_slug.count(slug))
      throw SpecError("reference " + slug + " has no spec; write problems/" + slug + ".toml (or remove the reference)");
  return reg;
}

const ProblemSpec& Registry::find(const std::string& key) const {
  for (auto& s : specs_)
    if (s.slug == key || s.stem == key || std::to_string(s.id) == key) return s;
  // A typo first ("coll_allreduse": coll_allreduce), then names that hold what was typed.
  std::vector<std::string> names;
  for (auto& s : specs_) names.push_back(s.slug), names.push_back(s.stem);
  std::vector<std::string> close;
  std::string near = io::nearest(key, names);
  if (!near.empty()) {
    for (auto& s : specs_)
      if (s.slug == near || s.stem == near) close.push_back(s.slug);
  }
  for (auto& s : specs_)
    if ((s.slug.find(key) != std::string::npos || s.stem.find(key) != std::string::npos) &&
        std::find(close.begin(), close.end(), s.slug) == close.end())
      close.push_back(s.slug);
  std::string msg = "unknown problem '" + key + "'";
  if (!close.empty()) {
    msg += "; did you mean ";
    for (size_t i = 0; i < close.size() && i < 5; ++i) msg += (i ? ", " : "") + close[i];
    msg += "?";
  } else {
    msg += "; `pkb list` shows the problems";
  }
  throw SpecError(msg);
}

std::string Registry::reference_source(const ProblemSpec& s) const {
  for (size_t i = 0; i < specs_.size(); ++i)
    if (specs_[i].slug == s.slug) return sources_[i];
  return "";
}

}  // namespace pkb::spec
