// Candidates in the original ParallelKernelBench's format: modules defining solution(*inputs)
// over torch.distributed, run unchanged. On the CPU device (W = 2), modules of our own
// (tests/original/candidates): collectives on CPU tensors, symmetric memory in pkb's
// shared-memory heap, a tuple return, trailing group arguments, list arguments and a
// data-dependent result, module-level caches, an inline extension built before the run;
// wrong answers, a socket, a program, a sub-group, an unreadable extension call and a
// ParallelKittens module, each with its verdict and reason. The original's own files
// (../shared/thirdparty/pkb-original/candidates, read only by path): their extensions read
// before the run, their placement by stem, and on a GPU their evaluation (skipped here).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "io/files.hpp"
#include "launch/subprocess.hpp"
#include "spec/registry.hpp"
#include "spec/spec.hpp"
#include "sweep/candidates.hpp"
#include "support.hpp"

using namespace pkbtest;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kMods = kSrc + "/tests/original/candidates/";
const std::string kFive = PKB_ORIGINAL_FILES;  // the original's five files, for tests only

json read_json(const std::string& path) {
  std::ifstream f(path);
  return json::parse(f);
}

PkbRun eval(const std::string& problem, const std::string& file, const std::string& json_out,
            std::vector<std::string> extra = {}, const std::vector<std::pair<std::string, std::string>>& env = {}) {
  std::vector<std::string> args = {"eval", "-p", problem, "-s", file, "--device", "cpu", "-w", "2", "-n", "3",
                                   "--warmup", "3", "--iters", "5", "--json", json_out};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_pkb(args, 900, env);
}

const pkb::spec::Registry& registry() {
  static pkb::spec::Registry reg = [] {
    std::vector<std::string> slugs;
    for (auto& e : fs::directory_iterator(kSrc + "/reference"))
      if (e.path().extension() == ".cpp") slugs.push_back(e.path().stem().string());
    return pkb::spec::Registry::load({kSrc + "/problems"}, slugs);
  }();
  return reg;
}

struct ModuleCase {
  const char* file;
  const char* problem;
  const char* verdict;
  const char* says;  // in the result's message ("" for a correct one)
};

void PrintTo(const ModuleCase& c, std::ostream* os) { *os << c.file; }

}  // namespace

class OriginalModule : public ::testing::TestWithParam<ModuleCase> {};

TEST_P(OriginalModule, GetsItsVerdict) {
  const ModuleCase& c = GetParam();
  std::string out = temp_dir(std::string("orig-") + c.file) + "/r.json";
  PkbRun r = eval(c.problem, kMods + c.file, out);
  ASSERT_TRUE(fs::exists(out)) << r.out << r.err;
  json j = read_json(out);
  EXPECT_EQ(j["verdict"], c.verdict) << j["message"] << "\n" << r.err;
  EXPECT_NE(j["message"].get<std::string>().find(c.says), std::string::npos) << j["message"];
  EXPECT_EQ(j["candidate"]["backend"], "original");
  if (std::string(c.verdict) == "correct") {
    EXPECT_EQ(r.code, 0);
    // pkb copies what solution returns into its outputs inside the call, timed apart.
    EXPECT_GT(j["timing"]["copy_median_us"].get<double>(), 0);
    EXPECT_EQ(j["sandbox"]["seccomp"], true);
  }
  EXPECT_TRUE(survivors(r.tag).empty());
}

INSTANTIATE_TEST_SUITE_P(
    CpuDevice, OriginalModule,
    ::testing::Values(
        ModuleCase{"allreduce_collective.py", "coll_allreduce", "correct", ""},
        ModuleCase{"allreduce_symm.py", "coll_allreduce", "correct", ""},
        ModuleCase{"allreduce_symm_grow.py", "coll_allreduce", "correct", ""},
        ModuleCase{"layernorm_tuple.py", "dp_layernorm_bwd_allreduce", "correct", ""},
        ModuleCase{"moe_all2all_group.py", "ep_moe_all2all", "correct", ""},
        ModuleCase{"allgather_group.py", "sp_ulysses_allgather", "correct", ""},
        ModuleCase{"new_group.py", "coll_allreduce", "correct", ""},
        ModuleCase{"run_program.py", "coll_allreduce", "correct", ""},
        ModuleCase{"wrong_values.py", "coll_allreduce", "wrong", "elements differ"},
        ModuleCase{"wrong_count.py", "coll_allreduce", "wrong",
             "solution returned 2 values; the original's coll_allreduce returns 1 (y)"},
        ModuleCase{"new_group_subset.py", "coll_allreduce", "wrong",
                   "a process group of some of the ranks cannot be made"},
        ModuleCase{"unresolved_extension.py", "coll_allreduce", "wrong", "could not read this call's"},
        ModuleCase{"connect_tcp.py", "coll_allreduce", "integrity_violation", "socket"},
        ModuleCase{"parallelkittens.py", "coll_allreduce", "compile_error", "utils.parallelkittens_runtime"}),
    [](const auto& info) { return fs::path(info.param.file).stem().string(); });

// compile_cuda_extension: pkb builds the module's extension before the ranks start (on the
// CPU device as C++), into its cache, keyed by the call's arguments; the second evaluation
// finds it there. The rank loads it inside the sandbox.
TEST(OriginalExtension, BuiltBeforeTheRunThenCached) {
  std::string dir = temp_dir("orig-ext"), out = dir + "/r.json";
  std::vector<std::pair<std::string, std::string>> env = {{"PKB_CACHE_DIR", dir + "/cache"}};
  PkbRun cold = eval("coll_allreduce", kMods + "allreduce_extension.py", out, {}, env);
  ASSERT_EQ(cold.code, 0) << cold.out << cold.err;
  json j = read_json(out);
  EXPECT_EQ(j["verdict"], "correct") << j["message"];
  EXPECT_NE(cold.out.find("built in"), std::string::npos) << cold.out;
  ASSERT_EQ(std::distance(fs::directory_iterator(dir + "/cache/build/ext"), fs::directory_iterator()), 1);
  PkbRun warm = eval("coll_allreduce", kMods + "allreduce_extension.py", out, {}, env);
  ASSERT_EQ(warm.code, 0) << warm.out << warm.err;
  EXPECT_NE(warm.out.find("cached build"), std::string::npos) << warm.out;
  EXPECT_LT(read_json(out)["build_s"].get<double>(), 5.0);
}

// --candidate-format forces the kind either way; each then says what the file lacks.
TEST(OriginalFormat, ForcedEitherWay) {
  std::string out = temp_dir("orig-format") + "/r.json";
  PkbRun r = eval("coll_allreduce", kMods + "allreduce_collective.py", out, {"--candidate-format", "pkb"});
  EXPECT_EQ(read_json(out)["verdict"], "compile_error");
  EXPECT_NE(read_json(out)["message"].get<std::string>().find("pkb_run"), std::string::npos) << r.err;
  r = eval("coll_allreduce", kSrc + "/solutions_triton/cpu/coll_allreduce.py", out, {"--candidate-format", "original"});
  EXPECT_EQ(read_json(out)["verdict"], "compile_error");
  EXPECT_NE(read_json(out)["message"].get<std::string>().find("defines no solution"), std::string::npos) << r.err;
}

// The original's own files: every compile_cuda_extension call is read before the run from
// the file's constants (python/pkb/original/build.py --list runs none of the module).
TEST(OriginalFiles, ExtensionsReadBeforeTheRun) {
  const std::pair<const char*, const char*> files[] = {
      {"1_allreduce_cuda.py", "allreduce_bf16_h100_symm_mem_ext"},
      {"14_gemm_allscatter_cuda.py", "gemm_allscatter_p2p_ext"},
      {"14_gemm_allscatter_triton.py", "ptr_to_tensor_ext"},
      {"27_moe_all2all_primitive_cuda.py", "moe_all2all_pull_ext"},
      {"41_ddp_cuda.py", "ddp_bf16_symm_adam_h100_ext"}};
  for (auto& [file, ext] : files) {
    std::string path = kFive + "/" + file;
    if (!fs::exists(path)) GTEST_SKIP() << "the original's files are not at " << kFive;
    auto r = pkb::launch::run_process(
        {PKB_PYTHON, kSrc + "/python/pkb/original/build.py", "--source", path, "--list"}, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json calls = json::parse(r.out);
    ASSERT_EQ(calls.size(), 1u) << file << ": " << r.out;
    EXPECT_EQ(calls[0]["name"], ext) << file;
    EXPECT_EQ(calls[0]["why"], "") << file;
  }
}

// Their names: today's stems, or the first release's (ids 34-88 one higher, four problems
// named otherwise), the backend a suffix; files pkb cannot place say why.
TEST(OriginalFiles, PlacedByStem) {
  using pkb::sweep::place_original;
  auto slug = [](const std::string& stem) {
    auto p = place_original(stem, registry());
    return p.spec ? p.spec->slug + " " + p.backend : "- " + p.why;
  };
  EXPECT_EQ(slug("1_allreduce_cuda"), "coll_allreduce cuda");
  EXPECT_EQ(slug("14_gemm_allscatter_cuda"), "tp_gemm_allgather cuda");
  EXPECT_EQ(slug("14_gemm_allscatter_triton"), "tp_gemm_allgather triton");
  EXPECT_EQ(slug("14_gemm_allgather_cuda"), "tp_gemm_allgather cuda");
  EXPECT_EQ(slug("27_moe_all2all_primitive_cuda"), "ep_moe_all2all cuda");
  EXPECT_EQ(slug("41_ddp_cuda"), "dp_ddp_adam_step cuda");  // the first release's 41 is today's 40
  EXPECT_EQ(slug("40_ddp_cuda"), "dp_ddp_adam_step cuda");
  EXPECT_EQ(slug("11_gemm_allgather_AT_cuda"), "tp_allgather_gemm_transposed cuda");
  EXPECT_EQ(slug("12_gemm_allgather_triton"), "tp_allgather_gemm triton");
  EXPECT_EQ(slug("18_rms_norm_parallelkittens"), "tp_rmsnorm_allreduce parallelkittens");
  EXPECT_EQ(slug("34_ulysses_all_to_all_tensor_primitive_cuda"), "sp_ulysses_all2all cuda");
  EXPECT_EQ(slug("33_ulysses_all_to_all_tensor_primitive_cuda"), "sp_ulysses_all2all cuda");
  EXPECT_EQ(slug("46_reducescatter_fused_rmsnorm_cuda"), "tp_reducescatter_rmsnorm cuda");
  EXPECT_EQ(slug("46_gemv_decode_cuda"), "tp_lmhead_gemv_allgather cuda");
  EXPECT_EQ(slug("88_conv2d_boundary_exchange_cuda"), "cp_conv2d_halo_exchange cuda");
  EXPECT_NE(slug("47_fsdp_adamw_sharded_cuda").find("replaced by 46_gemv_decode"), std::string::npos);
  EXPECT_NE(slug("99_nothing_cuda").find("the stem of no problem"), std::string::npos);
}

// Every problem says how the original called it, or why such a module cannot run there.
TEST(OriginalSpecs, EveryProblemDeclaresItsCall) {
  for (auto& s : registry().all()) {
    if (s.category == "test") continue;
    EXPECT_TRUE(s.original.declared) << s.slug;
    EXPECT_TRUE(!s.original.args.empty() || !s.original.unsupported.empty()) << s.slug;
    EXPECT_EQ(s.original.returns.size() - std::count(s.original.returns.begin(), s.original.returns.end(), "_"),
              s.outputs.size())
        << s.slug;
  }
}

TEST(OriginalSpecs, BadTablesAreRefusedWithTheirLine) {
  std::string dir = temp_dir("orig-spec");
  std::string base = pkb::io::read_file(kSrc + "/problems/coll_allreduce.toml");
  auto refused = [&](const std::string& table) {
    std::string path = dir + "/coll_allreduce.toml";
    std::string text = base.substr(0, base.find("[original]")) + table;
    std::ofstream(path) << text;
    try {
      pkb::spec::load_spec(path);
    } catch (const pkb::spec::SpecError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refused("[original]\nargs = [\"xx\"]\n").find("uses unknown name 'xx'"), std::string::npos);
  EXPECT_NE(refused("[original]\nargs = [\"x\"]\nreturns = [\"z\"]\n").find("no output is called 'z'"),
            std::string::npos);
  EXPECT_NE(refused("[original]\nargs = [\"x\"]\nextra = 1\n").find("extra"), std::string::npos);
  EXPECT_EQ(refused("[original]\nargs = [\"x\", \"[item(x[rank, c]) for c in range(W)]\", \"x.t()\"]\n"), "accepted");
}

// A sweep over a folder named as the original names its files: placed ones evaluated, the
// others each named with the reason.
TEST(OriginalSweep, PlacesAndEvaluatesAFolder) {
  std::string dir = temp_dir("orig-sweep");
  fs::create_directories(dir + "/run/cpu");
  const std::pair<const char*, const char*> files[] = {
      {"allreduce_collective.py", "1_allreduce_cuda.py"},
      {"allreduce_symm.py", "1_allreduce_triton.py"},
      {"allgather_group.py", "35_ulysses_all_gather_into_tensor_primitive_cuda.py"},
      {"wrong_values.py", "99_nothing_cuda.py"},
      {"parallelkittens.py", "2_allgather_parallelkittens.py"},
      {"wrong_values.py", "21_clip_grad_norm_no_ep_cuda.py"}};
  for (auto& [from, to] : files) fs::copy_file(kMods + from, dir + "/run/cpu/" + to);
  PkbRun r = run_pkb({"sweep", "--solutions", dir + "/run", "--device", "cpu", "-w", "2", "-n", "2", "--warmup", "2",
                      "--iters", "2", "--out", dir + "/results.jsonl"},
                     1200);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::string said = r.out + r.err;
  for (const char* line : {"99_nothing_cuda.py: '99_nothing' is the stem of no problem",
                           "2_allgather_parallelkittens.py: a ParallelKittens module",
                           "21_clip_grad_norm_no_ep_cuda.py: pkb cannot run it for fsdp_clip_grad_norm",
                           "3 original-format file(s) not placed"})
    EXPECT_NE(said.find(line), std::string::npos) << line << "\n" << said;
  std::ifstream in(dir + "/results.jsonl");
  std::map<std::string, std::string> got;
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line);
    got[j["problem"].get<std::string>() + " " + j["sweep"]["run"].get<std::string>()] = j["verdict"];
  }
  EXPECT_EQ(got, (std::map<std::string, std::string>{{"coll_allreduce run_cuda", "correct"},
                                                     {"coll_allreduce run_triton", "correct"},
                                                     {"sp_ulysses_allgather run_cuda", "correct"}}));
  PkbRun rep = run_pkb({"report", dir + "/results.jsonl"});
  EXPECT_EQ(rep.code, 0) << rep.err;
  EXPECT_NE(rep.out.find("run_cuda"), std::string::npos) << rep.out;
}

// On a GPU: the original's five files evaluated unchanged at W = 1 (skipped without one;
// scripts/gpu-check.sh stage_original runs them with W = 2 too).
TEST(OriginalFiles, EvaluatedOnAGpu) {
  auto probe = pkb::launch::run_process({PKB_BIN, "doctor", "--json"}, 120);
  if (probe.exit_code != 0 || json::parse(probe.out).value("devices", json::array()).empty())
    GTEST_SKIP() << "no GPU visible: the original's CUDA and Triton files need one (scripts/gpu-check.sh original)";
  std::string out = temp_dir("orig-gpu") + "/r.json";
  PkbRun r = run_pkb({"eval", "-p", "ep_moe_all2all", "-s", kFive + "/27_moe_all2all_primitive_cuda.py", "-w", "1",
                      "-n", "5", "--json", out},
                     1800);
  ASSERT_TRUE(fs::exists(out)) << r.out << r.err;
  EXPECT_EQ(read_json(out)["verdict"], "correct") << read_json(out)["message"];
  // The model's own bug (H200, bench/results/h200-2026-12-06-v8): its barrier's 32-bit
  // atomics at byte offsets, misaligned, in torch as in pkb.
  r = run_pkb({"eval", "-p", "tp_gemm_allgather", "-s", kFive + "/14_gemm_allscatter_cuda.py", "-w", "1", "-n", "5",
               "--json", out},
              1800);
  ASSERT_TRUE(fs::exists(out)) << r.out << r.err;
  EXPECT_EQ(read_json(out)["verdict"], "crash") << read_json(out)["message"];
  EXPECT_NE(read_json(out)["message"].get<std::string>().find("misaligned address"), std::string::npos);
}

// pkb generate can ask for this format (prompts.toml, [backends.original]): the prompt states
// the problem's original call; a problem whose original call pkb cannot run is refused.
TEST(OriginalGenerate, PromptStatesTheCall) {
  PkbRun r = run_pkb({"prompt", "-p", "ep_moe_all2all", "--backend", "original"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* want : {"2. `list(input_split_sizes)`", "4. `None`", "compile_cuda_extension(name, cuda_src",
                           "symm_mem.rendezvous", "def rendezvous("})
    EXPECT_NE(r.out.find(want), std::string::npos) << want;
  r = run_pkb({"prompt", "-p", "fsdp_clip_grad_norm", "--backend", "original"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("cannot run for fsdp_clip_grad_norm: the original clips"), std::string::npos) << r.err;
}
