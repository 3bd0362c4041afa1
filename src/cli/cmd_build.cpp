// pkb build: compile a candidate into the cache and print its library's path (what pkb eval
// and pkb sweep build on the way; run/evaluation.hpp's build_for).
#include "build/builder.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "eval/verdict.hpp"
#include "launch/placement.hpp"
#include "run/evaluation.hpp"

namespace pkb::cli {

using json = nlohmann::json;

void add_build_command(CLI::App& app, Globals& g, Action& run) {
  static std::string build_src, build_device = "auto", build_tk_dir;
  auto* bcmd = app.add_subcommand("build", "Compile a candidate into the build cache and print the library's path");
  bcmd->add_option("-s,--solution", build_src, "the candidate file")->required();
  bcmd->add_option("--device", build_device, "cuda, cpu or auto (from the file's kind)")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  bcmd->add_option("--tk-dir", build_tk_dir, "ThunderKittens checkout (env PKB_TK_DIR)");
  add_format_option(bcmd);
  bcmd->callback([&] {
    run = [&] {
      launch::Placement p;
      build::Backend kind = build::backend_of(build_src);
      p.device = build_device != "auto" ? launch::device_from_name(build_device)
                 : kind == build::Backend::cpu ? launch::Device::cpu
                                               : launch::Device::cuda;
      if (p.device == launch::Device::cuda && kind != build::Backend::triton) {  // the GPU's architecture
        p.probe = launch::probe_devices();
        p.gpus = static_cast<int>(p.probe.value("devices", json::array()).size());
      }
      build::Result b = run::build_for(g.root, build_src, build_tk_dir, p);
      if (!b.ok) {
        fprintf(stderr, "pkb: compile error: %s\n%s", b.error.c_str(), b.log.c_str());
        return int(eval::kCompileError);
      }
      printf("%s\n", b.library.c_str());
      return int(eval::kOk);
    };
  });
}

}  // namespace pkb::cli
