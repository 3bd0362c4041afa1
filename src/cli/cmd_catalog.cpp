// pkb list, pkb show: what problems there are and what each one is.
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "cli/commands.hpp"
#include "eval/verdict.hpp"
#include "io/files.hpp"

namespace pkb::cli {

namespace {

// World sizes as short ranges: "1-64", "1,2,4,8", "2-8,16"; "-" when none.
std::string ranges(const std::vector<int>& ws) {
  std::string out;
  for (size_t i = 0; i < ws.size();) {
    size_t j = i;
    while (j + 1 < ws.size() && ws[j + 1] == ws[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + std::to_string(ws[i]);
    if (j >= i + 2) out += "-" + std::to_string(ws[j]);
    else if (j == i + 1) out += "," + std::to_string(ws[j]);
    i = j + 1;
  }
  return out.empty() ? "-" : out;
}

// The world sizes a problem runs at with a preset's sizes, or "-" without that preset.
std::string worlds_at(const spec::ProblemSpec& s, const std::string& preset) {
  if (!s.sizes.count(preset)) return "-";
  std::vector<int> ws;
  for (int w = s.min_world; w <= s.max_world; ++w)
    if (s.world_size_error(w, preset).empty()) ws.push_back(w);
  return ranges(ws);
}

}  // namespace

void add_catalog_commands(CLI::App& app, Globals& g, Action& run) {
  auto* list = app.add_subcommand("list", "List the problems, with the world sizes each runs at");
  static std::string category;
  list->add_option("-c,--category", category, "only this category (a key such as tp, or its name)");
  list->callback([&] {
    run = [&] {
      // The categories offered are those with problems here.
      std::map<std::string, int> loaded;
      for (auto& s : g.registry().all()) ++loaded[s.category];
      std::string keys;
      for (auto& k : spec::category_keys())
        if (loaded.count(k)) keys += (keys.empty() ? "" : ", ") + k;
      if (!category.empty() && spec::category_name(category).empty()) {
        bool by_name = false;
        for (auto& k : spec::category_keys())
          if (spec::category_name(k) == category) category = k, by_name = true;
        if (!by_name) throw UsageError("unknown category '" + category + "'; use one of " + keys);
      }
      if (!category.empty() && !loaded.count(category))
        throw UsageError(
            category == "test"
                ? "no problems of category 'test' are loaded: the harness's self-test problems (tests/api, tests/faults, "
                  "tests/candidates/problems) need --problem-dir and --reference-lib with the test references the test "
                  "build makes; the benchmark's categories are " + keys
                : "no problems of category '" + category + "' are loaded; the categories here are " + keys);
      printf("%-4s %-42s %-5s %-18s %s\n", "id", "problem", "cat", "W at default", "W at large");
      int n = 0;
      for (auto& s : g.registry().all()) {
        if (!category.empty() && s.category != category) continue;
        printf("%-4d %-42s %-5s %-18s %s\n", s.id, s.slug.c_str(), s.category.c_str(), worlds_at(s, "default").c_str(),
               worlds_at(s, "large").c_str());
        ++n;
      }
      printf("%d problem%s; W: the world sizes each size preset runs at (pkb show PROBLEM gives the constraints)\n", n,
             n == 1 ? "" : "s");
      return int(eval::kOk);
    };
  });

  auto* show = app.add_subcommand("show", "Print a problem's spec and reference source");
  static std::string key;
  show->add_option("problem", key, "slug, original id or original stem")->required();
  show->callback([&] {
    run = [&] {
      const spec::ProblemSpec& s = g.problem(key);
      printf("# %s  (id %d, %s; %s)\n# %s\n\n", s.slug.c_str(), s.id, s.stem.c_str(),
             spec::category_name(s.category).c_str(), s.path.c_str());
      printf("%s\n", io::read_file(s.path).c_str());
      std::string src = g.registry().reference_source(s);
      printf("# reference: %s\n\n%s", src.c_str(), io::read_file(src).c_str());
      return int(eval::kOk);
    };
  });
}

}  // namespace pkb::cli
