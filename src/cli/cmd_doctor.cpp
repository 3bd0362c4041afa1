// pkb doctor: what this machine offers (GPUs, links, versions, MPS), printed so a prompt
// can quote it. pkb selftest: the runtime's own end-to-end check on this machine.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "build/builder.hpp"
#include "build/built_with.hpp"
#include "cli/commands.hpp"
#include "eval/verdict.hpp"
#include "launch/cpus.hpp"
#include "launch/subprocess.hpp"
#include "rank/sandbox.hpp"
#include "spec/hardware.hpp"

namespace pkb::cli {

namespace {

std::string version_str(int v, int major_div, int minor_div, int minor_mod) {
  return std::to_string(v / major_div) + "." + std::to_string(v / minor_div % minor_mod);
}

// The line of a tool's --version output that holds `word` ("release 13.0"), "" without one.
std::string version_of(const std::vector<std::string>& argv, const std::string& word) {
  launch::ProcessResult r = launch::run_process(argv, 60);
  std::stringstream lines(r.out + r.err);
  for (std::string line; std::getline(lines, line);)
    if (line.find(word) != std::string::npos) return line;
  return "";
}

// Which kinds of candidate this build can run, and with what: {kind: {"runs": bool, "how": text}}.
nlohmann::json candidate_kinds(const Globals& g, bool gpus_visible) {
  build::Toolchain tc = build::Toolchain::from_build(g.root);
  nlohmann::json k;
  std::string gpu_note = gpus_visible ? "" : "; it needs a GPU, and none is visible here";
  if (tc.nvcc.empty()) {
    k["cuda"] = {{"runs", false}, {"nvcc", ""}, {"how", "no: pkb was built without the CUDA toolkit (nvcc); install it and rebuild"}};
  } else {
    std::string release = version_of({tc.nvcc, "--version"}, "release");
    size_t at = release.find("release ");
    std::string ver = at == std::string::npos ? "" : release.substr(at + 8, release.find(',', at) - at - 8);
    k["cuda"] = {{"runs", true},
                 {"nvcc", tc.nvcc},
                 {"how", "yes, nvcc " + tc.nvcc + (ver.empty() ? "" : " (CUDA " + ver + ")") + gpu_note}};
  }
  const char* tk_env = std::getenv("PKB_TK_DIR");
  std::string tk = tk_env ? tk_env : "";
  bool tk_headers = !tk.empty() && (std::filesystem::exists(tk + "/include/kittens.cuh") ||
                                    std::filesystem::exists(tk + "/kittens.cuh"));
  k["tk"] = {{"runs", !tc.nvcc.empty()},
             {"how", tc.nvcc.empty() ? "no: it needs nvcc, as CUDA does"
                     : tk.empty()    ? "with a ThunderKittens checkout: set PKB_TK_DIR (unset now) or pass --tk-dir"
                     : tk_headers    ? "yes, ThunderKittens from PKB_TK_DIR=" + tk + gpu_note
                                     : "PKB_TK_DIR=" + tk + " holds no kittens.cuh: point it at a ThunderKittens checkout"}};
  if (tc.python.empty()) {
    k["python"] = {{"runs", false},
                   {"how", "no: pkb was built without embedded Python (the interpreter's headers and shared libpython)"}};
  } else {
    launch::ProcessResult t = launch::run_process({tc.python, "-c", "import triton; print(triton.__version__)"}, 120);
    std::string triton = t.ok() ? t.out.substr(0, t.out.find('\n')) : "";
    k["python"] = {{"runs", true},
                   {"python", tc.python},
                   {"triton", triton},
                   {"how", "yes, in " + tc.python + (triton.empty() ? " (no Triton there: torch ops on the CPU device only)"
                                                                   : " (Triton " + triton + ")")}};
  }
  std::string cxx = launch::which("c++");
  k["cpu"] = {{"runs", !cxx.empty()},
              {"how", cxx.empty() ? "no: no C++ compiler (c++) on PATH" : "yes, " + cxx}};
  return k;
}

}  // namespace

void add_doctor_commands(CLI::App& app, Globals& g, Action& run) {
  auto* doctor = app.add_subcommand("doctor", "Describe this machine: GPUs, links, versions, MPS");
  static bool as_json = false;
  doctor->add_flag("--json", as_json, "print JSON");
  doctor->callback([&] {
    run = [&] {
      nlohmann::json probe = launch::probe_devices();
      rank::SandboxStatus sandbox = rank::sandbox_support();
      probe["sandbox"] = sandbox.to_json();
      probe["pkb_version"] = PKB_VERSION;
      probe["torch_version"] = build::kBuiltWith.torch_version;
      probe["mps_control"] = launch::which("nvidia-cuda-mps-control");
      probe["root"] = g.root;
      // The profile eval measures rooflines against and prompts quote (--hardware overrides).
      auto profiles = spec::load_profiles(g.root + "/hardware/profiles.toml");
      auto devs_seen = probe.value("devices", nlohmann::json::array());
      const spec::HardwareProfile* hw =
          devs_seen.empty() ? spec::pick_profile(profiles, "cpu", 0)
                            : spec::pick_profile(profiles, devs_seen[0].value("name", ""), static_cast<int>(devs_seen.size()));
      probe["hardware_profile"] = hw ? hw->name : "";
      probe["candidates"] = candidate_kinds(g, !devs_seen.empty());
      std::optional<bool> bf16 = launch::cpu_has_bf16();
      probe["cpu"] = {{"cores", std::thread::hardware_concurrency()}, {"bf16", bf16 ? nlohmann::json(*bf16) : nlohmann::json()}};
      if (as_json) {
        printf("%s\n", probe.dump(2).c_str());
        return int(eval::kOk);
      }
      printf("pkb %s, libtorch %s\n", PKB_VERSION, build::kBuiltWith.torch_version);
      if (!probe.value("cuda_built", false)) printf("CUDA device: not built in (CPU device only)\n");
      if (probe.contains("driver_version"))
        printf("CUDA driver %s, runtime %s, NCCL %d.%d.%d\n",
               version_str(probe["driver_version"], 1000, 10, 100).c_str(),
               version_str(probe["runtime_version"], 1000, 10, 100).c_str(), probe["nccl_version"].get<int>() / 10000,
               probe["nccl_version"].get<int>() / 100 % 100, probe["nccl_version"].get<int>() % 100);
      auto devs = probe.value("devices", nlohmann::json::array());
      printf("GPUs: %zu%s\n", devs.size(),
             probe.contains("note") ? (" (" + probe["note"].get<std::string>() + ")").c_str() : "");
      for (auto& d : devs)
        printf("  %d: %s, sm_%d%d, %d SMs, %.0f GiB, L2 %.0f MiB, %s, NVLinks %d, multicast %s\n",
               d["index"].get<int>(), d["name"].get<std::string>().c_str(), d["cc"][0].get<int>(),
               d["cc"][1].get<int>(), d["sm_count"].get<int>(), d["memory_bytes"].get<double>() / (1 << 30),
               d["l2_bytes"].get<double>() / (1 << 20), d["pci_bus_id"].get<std::string>().c_str(),
               d["nvlinks"].get<int>(), d["multicast_supported"].get<bool>() ? "supported (off unless --multicast)" : "no");
      if (devs.size() > 1) {
        printf("P2P access:\n     ");
        for (size_t b = 0; b < devs.size(); ++b) printf(" %3zu", b);
        printf("\n");
        for (size_t a = 0; a < devs.size(); ++a) {
          printf("  %2zu ", a);
          for (size_t b = 0; b < devs.size(); ++b) printf(" %3s", probe["p2p"][a][b].get<bool>() ? "yes" : "-");
          printf("\n");
        }
      }
      printf("hardware profile: %s\n", hw ? (hw->name + " (" + hw->description + ")").c_str()
                                         : "none matches (add one to hardware/profiles.toml)");
      printf("CPU: %u cores, bf16 instructions: %s\n", probe["cpu"]["cores"].get<unsigned>(),
             !bf16 ? "unknown"
             : *bf16
                 ? "yes"
                 : "no (the CPU device's bf16 work runs far slower than float32 here; --dtype float32 for quick runs)");
      std::string mps = probe["mps_control"];
      printf("MPS: %s\n", mps.empty() ? "nvidia-cuda-mps-control not found (ranks sharing a GPU time-slice)"
                                      : ("available (" + mps + ")").c_str());
      const nlohmann::json& kinds = probe["candidates"];
      printf("candidates this build runs:\n");
      for (auto [key, label] : {std::pair{"cuda", "CUDA (.cu)"}, {"tk", "ThunderKittens (.cu with kittens.cuh)"},
                                {"python", "Triton/Python (.py)"}, {"cpu", "CPU device (.cpp)"}})
        printf("  %-38s %s\n", label, kinds[key]["how"].get<std::string>().c_str());
      printf("sandbox: environment allow-list, process limits, leftover processes ended; files: %s; network and "
             "processes (seccomp): %s\n",
             sandbox.filesystem ? ("Landlock ABI " + std::to_string(sandbox.landlock_abi)).c_str() : "no Landlock here",
             sandbox.seccomp ? "yes" : "no");
      return int(eval::kOk);
    };
  });

  auto* self = app.add_subcommand("selftest", "Check the runtime: bootstrap, communicator, symmetric heap, device barrier");
  static RunOptions ro;
  static int iters = 2000;
  ro.add_to(self);
  self->add_option("--barrier-iters", iters, "device barriers to time")->check(CLI::Range(1, 10000000));
  self->callback([&] {
    run = [&] {
      launch::Placement p = place(ro, nullptr, "default");
      rank::Job job;
      job.mode = "selftest";
      job.trials = 0;
      job.heap_bytes = size_t{1} << 22;
      job.barrier_iters = iters;
      launch::GroupReport r = run_ranks(g, p, ro, job, nullptr, "selftest");
      printf("pkb selftest  W=%d  device=%s  comm=%s  ranks/GPU=%d  MPS=%s\n", p.world, launch::name(p.device),
             launch::name(p.comm), p.ranks_per_gpu, p.mps ? "private daemon" : "no");
      if (r.outcome != launch::Outcome::Ok) {
        fprintf(stderr, "%s", r.details().c_str());
        return exit_for(r);
      }
      bool ok = true;
      printf("%-5s %-10s %-10s %s\n", "rank", "allreduce", "heap", "barrier");
      for (auto& rk : r.ranks) {
        auto j = nlohmann::json::parse(rk.result);
        bool a = j["allreduce_ok"], h = j["heap_peers_ok"];
        ok = ok && a && h;
        printf("%-5d %-10s %-10s %.2f us\n", rk.rank, a ? "ok" : "WRONG", h ? "ok" : "WRONG", j["barrier_us"].get<double>());
      }
      printf("%s (%.1f s)\n", ok ? "ok" : "FAILED", r.wall_s);
      return ok ? int(eval::kOk) : int(eval::kWrong);
    };
  });
}

}  // namespace pkb::cli
