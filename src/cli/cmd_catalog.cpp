// pkb list, pkb show: what problems there are and what each one is.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/commands.hpp"
#include "eval/verdict.hpp"
#include "io/files.hpp"

namespace pkb::cli {

namespace {

}  // namespace

void add_catalog_commands(CLI::App& app, Globals& g, Action& run) {
  auto* list = app.add_subcommand("list", "List the problems, with their world-size constraints");
  static std::string category;
  list->add_option("-c,--category", category, "only this category (a key such as tp, or its name)");
  list->callback([&] {
    run = [&] {
      if (!category.empty() && spec::category_name(category).empty()) {
        bool by_name = false;
        for (auto& k : spec::category_keys())
          if (spec::category_name(k) == category) category = k, by_name = true;
        if (!by_name) {
          std::string keys;
          for (auto& k : spec::category_keys()) keys += (keys.empty() ? "" : ", ") + k;
          throw UsageError("unknown category '" + category + "'; use one of " + keys);
        }
      }
      printf("%-4s %-44s %-6s %s\n", "id", "problem", "cat", "world sizes");
      int n = 0;
      for (auto& s : g.registry().all()) {
        if (!category.empty() && s.category != category) continue;
        printf("%-4d %-44s %-6s %s\n", s.id, s.slug.c_str(), s.category.c_str(), s.world_size_summary().c_str());
        ++n;
      }
      printf("%d problem%s\n", n, n == 1 ? "" : "s");
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
