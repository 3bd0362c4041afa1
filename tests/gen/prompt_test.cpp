// Prompts: the real prompts.toml states the spec's facts (shapes as formulas and evaluated),
// the reference, the ABI and the backend's helpers, the hardware and precision; shot options
// add in-context pairs and never the problem asked; configuration mistakes name themselves.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "gen/error.hpp"
#include "gen/prompt.hpp"
#include "spec/hardware.hpp"

namespace fs = std::filesystem;
using namespace pkb;
using namespace pkb::gen;

namespace {

const std::string kRoot = PKB_SOURCE_DIR;

const spec::Registry& registry() {
  static const spec::Registry reg = [] {
    std::vector<std::string> slugs;
    for (auto& e : fs::directory_iterator(kRoot + "/problems"))
      if (e.path().extension() == ".toml") slugs.push_back(e.path().stem().string());
    return spec::Registry::load({kRoot + "/problems"}, slugs);
  }();
  return reg;
}

const std::vector<spec::HardwareProfile>& profiles() {
  static const auto p = spec::load_profiles(kRoot + "/hardware/profiles.toml");
  return p;
}

Prompt make(const PromptBook& book, const std::string& problem, const std::string& backend, const std::string& shots,
            const std::string& hardware = "h100_8", Setting setting = {}) {
  PromptRequest req;
  req.problem = &registry().find(problem);
  req.root = kRoot;
  req.backend = backend;
  req.shots = shots;
  req.hardware = hardware == "none" ? nullptr : spec::find_profile(profiles(), hardware);
  req.setting = setting;
  return assemble_prompt(book, registry(), req);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A small prompts.toml of our own, in a temporary folder with its example files.
class GenPromptBook : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pkb-prompt-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (auto slug : {"coll_allreduce", "coll_alltoall"})
      std::ofstream(dir_ / (std::string(slug) + ".cu")) << "// candidate for " << slug << "\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& templates, const std::string& extra = "") {
    std::string path = (dir_ / "prompts.toml").string();
    std::ofstream(path) << "[templates]\n"
                        << templates << "\n[examples]\none = \"One example:\"\nmany = \"{example_count} examples:\"\n"
                        << "entry = \"<{example_problem}|{example_candidate}|{example_reference_path}>\"\n"
                        << "[backends.cuda]\nname = \"CUDA\"\ntags = [\"cuda\"]\nextension = \"cu\"\n"
                        << "system = \"sys {backend_name}\"\n"
                        << "[[backends.cuda.examples]]\nproblem = \"coll_allreduce\"\ncandidate = \""
                        << (dir_ / "coll_allreduce.cu").string() << "\"\n"
                        << "[[backends.cuda.examples]]\nproblem = \"coll_alltoall\"\ncandidate = \""
                        << (dir_ / "coll_alltoall.cu").string() << "\"\n"
                        << "[shots.zero_shot]\ncomponents = [\"body\"]\n"
                        << "[shots.one_shot]\ncomponents = [\"body\", \"examples\"]\nexamples = 1\n"
                        << "[shots.few_shot]\ncomponents = [\"body\", \"examples\"]\nexamples = 2\n"
                        << extra;
    return path;
  }
  std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const pkb::io::InputError& e) {  // GenError, and the TOML reader's own errors
      return e.what();
    }
    return "no error";
  }
  fs::path dir_;
};

}  // namespace

TEST(GenPrompt, StatesTheSpecReferenceAbiHelpersHardwareAndPrecision) {
  PromptBook book = PromptBook::load(kRoot + "/prompts.toml", profiles());
  Prompt p = make(book, "coll_gather", "cuda", "zero_shot");
  EXPECT_TRUE(has(p.system, "CUDA")) << p.system;
  // Shapes as formulas and evaluated at W = 8 (the profile's GPUs), per rank where they differ.
  EXPECT_TRUE(has(p.user, "in[0] x: bf16 [M, N] = [1024, 1024]")) << p.user;
  EXPECT_TRUE(has(p.user,
                  "out[0] y: bf16 [if(rank == root, W, 0), M, N] = [8, 1024, 1024] on rank 0, "
                  "[0, 1024, 1024] on ranks 1-7"))
      << p.user;
  EXPECT_TRUE(has(p.user, "torch.allclose(atol=0, rtol=0)"));
  EXPECT_TRUE(has(p.user, "W ranks, 1..64"));
  EXPECT_TRUE(has(p.user, "Derived values (at rank 0): root = 0\n"));
  EXPECT_TRUE(has(p.user, "PKB_REFERENCE(\"coll_gather\"")) << "the reference source";
  EXPECT_TRUE(has(p.user, "reference/coll_gather.cpp"));
  EXPECT_TRUE(has(p.user, "#define PKB_ABI_VERSION 1")) << "solution.h verbatim";
  EXPECT_TRUE(has(p.user, "barrier_block")) << "device.cuh verbatim";
  EXPECT_TRUE(has(p.user, "NVLink 450 GB/s")) << "the h100_8 profile";
  EXPECT_TRUE(has(p.user, "bfloat16")) << "the bf16 precision note";
  EXPECT_TRUE(has(p.user, "`coll_gather.cu` in a single fenced code block tagged\n`cuda`"));
  EXPECT_EQ(p.hash(), make(book, "coll_gather", "cuda", "zero_shot").hash());
  EXPECT_NE(p.hash(), make(book, "coll_scatter", "cuda", "zero_shot").hash());
}

TEST(GenPrompt, BackendsQuoteTheirOwnHelpersAndSettingsChangeTheFacts) {
  PromptBook book = PromptBook::load(kRoot + "/prompts.toml", profiles());
  Prompt cpu = make(book, "coll_alltoall", "cpu", "zero_shot", "cpu", {4, "large", "fp32"});
  EXPECT_TRUE(has(cpu.user, "pkb::host")) << "host.hpp";
  EXPECT_FALSE(has(cpu.user, "barrier_block")) << "not device.cuh";
  EXPECT_TRUE(has(cpu.user, "in[0] x: fp32 [W, M, N] = [4, 8192, 8192]")) << cpu.user;
  EXPECT_TRUE(has(cpu.user, "Precision: the 'dt' tensors are fp32"));
  Prompt none = make(book, "coll_alltoall", "triton", "zero_shot", "none");
  EXPECT_FALSE(has(none.user, "## The machine"));
  EXPECT_TRUE(has(none.user, "tagged\n`python`")) << "the triton fence tag";
  // Triton and ThunderKittens: each its own ABI description and a working example.
  Prompt triton = make(book, "coll_alltoall", "triton", "one_shot", "none");
  EXPECT_TRUE(has(triton.user, "class Ctx:")) << "python/pkb/__init__.py verbatim";
  EXPECT_TRUE(has(triton.user, "def barrier_on_stream(ctx")) << "python/pkb/triton.py verbatim";
  EXPECT_TRUE(has(triton.user, "solutions_triton/coll_allreduce.py")) << "the example";
  EXPECT_TRUE(has(triton.user, "@triton.jit"));
  Prompt tk = make(book, "coll_allreduce", "tk", "one_shot", "none");
  EXPECT_TRUE(has(tk.user, "make_pgl")) << "include/pkb/tk.cuh verbatim";
  EXPECT_TRUE(has(tk.user, "solutions_tk/tp_gemm_allgather.cu")) << "the example other than the problem asked";
  EXPECT_TRUE(has(tk.system + tk.user, "-std=c++20"));
}

TEST(GenPrompt, HardwareAutoQuotesWhatPkbDoctorSees) {
  nlohmann::json probe = {{"devices",
                           {{{"name", "NVIDIA H100 80GB HBM3"},
                             {"cc", {9, 0}},
                             {"sm_count", 132},
                             {"memory_bytes", 85520809984.0},
                             {"l2_bytes", 52428800.0},
                             {"nvlinks", 18}},
                            {{"name", "NVIDIA H100 80GB HBM3"}, {"cc", {9, 0}}}}},
                          {"p2p", {{true, true}, {true, true}}}};
  std::string seen = describe_devices(probe);
  EXPECT_EQ(seen,
            "pkb doctor sees 2 x NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 80 GiB, L2 50 MiB, 18 NVLinks per GPU), "
            "with peer access between every pair.");
  EXPECT_EQ(spec::pick_profile(profiles(), "NVIDIA H100 80GB HBM3", 4)->name, "h100_4");
  EXPECT_EQ(describe_devices({{"devices", nlohmann::json::array()}}), "");

  PromptBook book = PromptBook::load(kRoot + "/prompts.toml", profiles());
  PromptRequest req;
  req.problem = &registry().find("coll_allreduce");
  req.root = kRoot;
  req.shots = "zero_shot";
  req.hardware = spec::find_profile(profiles(), "h100_4");
  req.detected = seen;
  req.setting.world = 4;
  Prompt p = assemble_prompt(book, registry(), req);
  EXPECT_TRUE(has(p.user, "Timing runs on 4x H100 SXM 80GB")) << p.user;
  EXPECT_TRUE(has(p.user, seen));
}

TEST(GenPrompt, NearestWorldSizeTheProblemAllows) {
  spec::ProblemSpec s = registry().find("coll_allreduce");
  EXPECT_EQ(nearest_world(s, 8, "default"), 8);
  s.constraints = {spec::Expr::parse("W % 3 == 0")};
  EXPECT_EQ(nearest_world(s, 8, "default"), 9);
  EXPECT_EQ(nearest_world(s, 7, "default"), 6);
}

TEST_F(GenPromptBook, OneAndFewShotShowPairsButNeverTheProblemAsked) {
  PromptBook book = PromptBook::load(write("body = \"Task {problem}.\""), profiles());
  Prompt one = make(book, "coll_allreduce", "cuda", "one_shot", "none");
  EXPECT_EQ(one.user,
            "Task coll_allreduce.\n\nOne example:\n\n<coll_alltoall|// candidate for coll_alltoall|"
            "reference/coll_alltoall.cpp>\n");
  EXPECT_EQ(one.system, "sys CUDA\n");
  Prompt few = make(book, "coll_scatter", "cuda", "few_shot", "none");
  EXPECT_TRUE(has(few.user, "2 examples:\n\n<coll_allreduce|")) << few.user;
  EXPECT_TRUE(has(few.user, "<coll_alltoall|")) << few.user;
  std::string err = error_of([&] { make(book, "coll_allreduce", "cuda", "few_shot", "none"); });
  EXPECT_TRUE(has(err, "few_shot needs 2 example(s) for backend cuda besides coll_allreduce")) << err;
  EXPECT_TRUE(has(err, "--shots zero_shot")) << err;
}

TEST_F(GenPromptBook, MissingExampleFileIsNamed) {
  PromptBook book = PromptBook::load(write("body = \"x\""), profiles());
  fs::remove(dir_ / "coll_alltoall.cu");
  std::string err = error_of([&] { make(book, "coll_allreduce", "cuda", "one_shot", "none"); });
  EXPECT_TRUE(has(err, "coll_alltoall.cu does not exist; write it, or use --shots zero_shot")) << err;
  EXPECT_NO_THROW(make(book, "coll_allreduce", "cuda", "zero_shot", "none"));
}

TEST_F(GenPromptBook, UnknownPlaceholdersAndComponentsFailAtLoad) {
  std::string err = error_of([&] { PromptBook::load(write("body = \"Task {problme}.\""), profiles()); });
  EXPECT_TRUE(has(err, "template 'body' uses unknown placeholder {problme}")) << err;
  err = error_of(
      [&] { PromptBook::load(write("body = \"x\"", "[shots.bad]\ncomponents = [\"nobody\"]\n"), profiles()); });
  EXPECT_TRUE(has(err, "[shots.bad] lists component 'nobody'")) << err;
  err = error_of([&] { PromptBook::load(write("body = \"x\"\nbroken = "), profiles()); });
  EXPECT_TRUE(has(err, "prompts.toml:3: malformed TOML")) << err;
  err = error_of([&] { PromptBook::load(write("body = \"x\"", "[backends.cuda.extra]\n"), profiles()); });
  EXPECT_NE(err, "no error");
}
