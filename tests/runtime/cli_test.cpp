// Bad input gets one clear error line and a non-zero exit; the registry commands work.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include <nlohmann/json.hpp>

#include "io/elf.hpp"
#include "rank/settings.hpp"
#include "support.hpp"

using namespace pkbtest;

TEST(Cli, UnknownProblem) {
  PkbRun r = run_pkb({"dryrun", "-p", "allreduc", "--device", "cpu"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "pkb: error: unknown problem 'allreduc'; did you mean coll_allreduce")) << r.err;
  // A typo: the nearest name first.
  r = run_pkb({"eval", "-p", "coll_allreduse", "-s", std::string(PKB_SOURCE_DIR) + "/solutions_cpu/coll_allreduce.cpp",
               "--device", "cpu"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "pkb: error: unknown problem 'coll_allreduse'; did you mean coll_allreduce?\n");
}

TEST(Cli, MalformedSpecInAProblemFolder) {
  std::string dir = temp_dir("badspec");
  std::ofstream(dir + "/coll_broken.toml") << "slug = \"coll_broken\"\nid = 77\n[sizes\n";
  PkbRun r = run_pkb({"--problem-dir", dir, "list"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "coll_broken.toml:3: malformed TOML")) << r.err;
}

TEST(Cli, WorldSizeOutsideTheConstraints) {
  PkbRun r = run_pkb({"dryrun", "-p", "coll_allreduce", "--device", "cpu", "-w", "65"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "runs with 1 to 64 ranks, not 65")) << r.err;
}

TEST(Cli, BadOptionValues) {
  EXPECT_EQ(run_pkb({"dryrun", "-p", "1", "--device", "tpu"}).code, 2);
  PkbRun r = run_pkb({"dryrun", "-p", "1", "--device", "cpu", "--dtype", "float"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "unknown --dtype 'float'")) << r.err;
  r = run_pkb({"dryrun", "-p", "1", "--device", "cpu", "--size", "huge"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "no size 'huge'")) << r.err;
}

// A mistyped flag or command gets one line naming the nearest one.
TEST(Cli, UnknownFlagsAndCommandsGetASuggestion) {
  PkbRun r = run_pkb({"eval", "-p", "coll_allreduce", "-s", "x.cpp", "--trial", "3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "pkb: error: unknown flag --trial for pkb eval; did you mean --trials?\n");
  r = run_pkb({"sweep", "--solutions", "s", "--out", "o.jsonl", "--world-sizes=4"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "unknown flag --world-sizes for pkb sweep; did you mean --world-size?")) << r.err;
  r = run_pkb({"eval", "-p", "1", "-s", "x.cpp", "--frobnicate"});
  EXPECT_TRUE(contains(r.err, "unknown flag --frobnicate for pkb eval; pkb eval --help lists them")) << r.err;
  r = run_pkb({"--root", PKB_SOURCE_DIR, "evl", "-p", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "pkb: error: unknown command 'evl' (did you mean eval?); the commands are list, show"))
      << r.err;
  r = run_pkb({"report", "--md"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  // A long flag is compared with long flags only: never "-h" for "--m".
  r = run_pkb({"generate", "-p", "1", "--m", "gpt-5.5"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "pkb: error: unknown flag --m for pkb generate; did you mean --model?\n");
  r = run_pkb({"list", "--m"});
  EXPECT_EQ(r.err, "pkb: error: unknown flag --m for pkb list; pkb list --help lists them\n");
}

// A value out of range says the range in words, on one short line.
TEST(Cli, ValuesOutOfRangeSayTheRange) {
  const std::string cand = std::string(PKB_SOURCE_DIR) + "/solutions_cpu/coll_allreduce.cpp";
  PkbRun r = run_pkb({"eval", "-p", "1", "-s", cand, "--timeout", "0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "pkb: error: --timeout takes a number above 0, not 0; pkb eval --help says what each flag takes\n");
  r = run_pkb({"eval", "-p", "1", "-s", cand, "--trials", "0"});
  EXPECT_EQ(r.err, "pkb: error: --trials takes 1 to 100000, not 0; pkb eval --help says what each flag takes\n");
  r = run_pkb({"generate", "-m", "x", "-p", "1", "--retry-delay=-1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "--retry-delay takes a number of 0 or more, not -1")) << r.err;
  EXPECT_LT(r.err.size(), 120u) << r.err;
}

// An unknown hardware profile lists the profiles there are.
TEST(Cli, UnknownHardwareProfileListsTheProfiles) {
  PkbRun r = run_pkb({"eval", "-p", "1", "-s", std::string(PKB_SOURCE_DIR) + "/solutions_cpu/coll_allreduce.cpp",
                      "--device", "cpu", "-w", "2", "--hardware", "h100"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "pkb: error: no hardware profile 'h100' in hardware/profiles.toml (did you mean h100_4?); "
                              "the profiles are a100_8, b200_8, cpu, h100_4, h100_8, h200_1, h200_8, or auto\n"))
      << r.err;
}

// Users of the original ParallelKernelBench: the spellings that mean the same thing work
// (--nproc-per-node and --num-gpus for -w, bfloat16 and float32 for bf16 and fp32).
TEST(Cli, TheOriginalsSpellingsWork) {
  using json = nlohmann::json;
  const std::string cand = std::string(PKB_SOURCE_DIR) + "/solutions_cpu/coll_allreduce.cpp";
  std::string dir = temp_dir("original-spellings");
  PkbRun r = run_pkb({"eval", "-p", "1", "-s", cand, "--device", "cpu", "--nproc-per-node", "2", "--dtype", "bfloat16",
                      "-n", "2", "--no-timing", "--json", dir + "/a.json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  json a = json::parse(std::ifstream(dir + "/a.json"));
  EXPECT_EQ(a["run"]["world"], 2);
  EXPECT_EQ(a["run"]["dtype"], "bf16");
  r = run_pkb({"eval", "-p", "1_allreduce", "-s", cand, "--device", "cpu", "--num-gpus", "3", "--dtype", "float32",
               "-n", "2", "--no-timing", "--json", dir + "/b.json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  json b = json::parse(std::ifstream(dir + "/b.json"));
  EXPECT_EQ(b["run"]["world"], 3);
  EXPECT_EQ(b["run"]["dtype"], "fp32");
  r = run_pkb({"dryrun", "-p", "1", "--device", "cpu", "--num-gpus", "2", "--dtype", "float16", "-n", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "W=2")) << r.out;
  EXPECT_TRUE(contains(r.out, "fp16[")) << r.out;
  // pkb sweep takes them too: the run stops at its (missing) solutions, not at the flag.
  r = run_pkb({"sweep", "--solutions", "/nonexistent", "--out", temp_dir("alias-sweep") + "/r.jsonl", "--device", "cpu",
               "--nproc-per-node", "2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_FALSE(contains(r.err, "--nproc-per-node")) << r.err;
  // Hidden from the help, which shows pkb's own spelling.
  r = run_pkb({"eval", "--help"});
  EXPECT_FALSE(contains(r.out, "--nproc-per-node")) << r.out;
}

// The original's flags that pkb spells another way get one line with the pkb way.
TEST(Cli, TheOriginalsOtherFlagsGetThePkbWay) {
  const std::string cand = std::string(PKB_SOURCE_DIR) + "/solutions_cpu/coll_allreduce.cpp";
  auto one_line = [](const PkbRun& r, const std::string& want) {
    EXPECT_EQ(r.code, 2);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(contains(r.err, want)) << r.err;
  };
  one_line(run_pkb({"eval", "-p", "1", "-s", cand, "--measure-perf"}),
           "pkb: error: --measure-perf is the original ParallelKernelBench's flag: pkb always times both sides after "
           "the correctness trials (--no-timing turns timing off)");
  one_line(run_pkb({"eval", "-p", "1", "-s", cand, "--mode", "eval"}),
           "pkb: error: pkb takes the mode as its command: `pkb eval -p PROBLEM -s FILE -w N ...`");
  one_line(run_pkb({"eval", "-p", "1", "-s", cand, "--mode", "both"}),
           "`pkb eval` checks and times a candidate against the reference (--mode eval), `pkb dryrun` runs the "
           "reference alone (--mode dryrun)");
  one_line(run_pkb({"--nproc-per-node", "4", "--mode", "eval", "--problem", "1", "--solution", "cuda"}),
           "pkb: error: pkb takes the mode as its command: `pkb eval -p PROBLEM -s FILE -w N ...`");
  one_line(run_pkb({"eval", "-p", "1", "-s", cand, "--download"}), "pkb eval --save-outputs DIR writes");
  one_line(run_pkb({"eval", "-p", "1", "-s", cand, "--solutions-dir", "/tmp"}),
           "pkb eval -s takes the candidate file itself (-s solutions_cuda/coll_allreduce.cu); `pkb sweep --solutions "
           "DIR` evaluates a folder of them");
  one_line(run_pkb({"eval", "-p", "1", "-s", cand, "--m", "4096"}),
           "problems name their own sizes: give them with --size M=4096,N=1024");
  one_line(run_pkb({"dryrun", "-p", "1", "--solution", "cuda"}),
           "pkb: error: pkb dryrun runs the reference alone (--solution reference); to run a candidate, `pkb eval");
  // A backend name where pkb wants a file: the file it means.
  one_line(run_pkb({"eval", "-p", "1", "-s", "triton", "--device", "cpu"}),
           "pkb: error: -s takes a candidate file, not a backend name ('triton'); e.g. -s ");
  PkbRun r = run_pkb({"eval", "-p", "1", "-s", "triton"});
  EXPECT_TRUE(contains(r.err, "solutions_triton/coll_allreduce.py; `pkb sweep --solutions solutions_triton` evaluates "
                              "a folder"))
      << r.err;
  one_line(run_pkb({"eval", "-p", "1", "-s", "reference"}),
           "-s reference: pkb eval always runs the reference beside the candidate; `-s @reference` runs the reference "
           "as the candidate too (a sanity run of pkb), `pkb dryrun -p 1` runs the reference alone");
}

// nccl-tests users read -w as warm-up and -n as iterations: the help says what they are
// beside --warmup and --iters.
TEST(Cli, EvalHelpSaysWhatDashWAndDashNAre) {
  PkbRun r = run_pkb({"eval", "--help"});
  ASSERT_EQ(r.code, 0);
  // A flag's entry: its line, and the indented line CLI11 wraps its description onto.
  auto line_of = [&](const std::string& flag) {
    size_t at = r.out.find("\n  " + flag);
    if (at == std::string::npos) return std::string();
    size_t end = r.out.find("\n  -", at + 1);
    return r.out.substr(at, end == std::string::npos ? std::string::npos : end - at);
  };
  EXPECT_TRUE(contains(line_of("--warmup"), "nccl-tests' -w; pkb's -w is --world-size")) << r.out;
  EXPECT_TRUE(contains(line_of("--iters"), "nccl-tests' -n; pkb's -n is --trials")) << r.out;
}

// One typed settings value end to end: `pkb eval`'s flags bind to it, the record keeps it
// (run.settings), and what pkb sweep and pkb agent spell back out of it (rank::to_flags) is
// the command line it came from.
TEST(Cli, EvalSettingsFromFlagsBackToTheSameFlags) {
  std::string dir = temp_dir("settings");
  const std::vector<std::string> given = {"--dtype", "fp32", "--trials", "2", "--warmup", "3", "--iters", "12",
                                          "--block", "2", "--interval", "0.05", "--cache", "warm"};
  std::vector<std::string> a = {"eval", "-p", "coll_allreduce", "-s", "@reference", "--device", "cpu", "-w", "1",
                                "--json", dir + "/r.json"};
  a.insert(a.end(), given.begin(), given.end());
  PkbRun r = run_pkb(a, 300);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::ifstream f(dir + "/r.json");
  nlohmann::json rec = nlohmann::json::parse(f);
  pkb::rank::EvalSettings s = pkb::rank::settings_from_json(rec["run"]["settings"]);
  EXPECT_EQ(pkb::rank::to_flags(s), given);
  EXPECT_EQ(rec["timing"]["rounds"]["block"], 2);
  EXPECT_EQ(rec["run"]["dtype"], "fp32");
}


TEST(Cli, ListAndShow) {
  PkbRun r = run_pkb({"list", "--category", "coll"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "coll_alltoall")) << r.out;
  EXPECT_TRUE(contains(r.out, "8 problems")) << r.out;
  // The world sizes each preset runs at, not a formula.
  EXPECT_TRUE(contains(r.out, "W at default       W at large\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "coll_allreduce                             coll  1-64               1-64\n")) << r.out;
  r = run_pkb({"list", "-c", "tp"});
  ASSERT_EQ(r.code, 0) << r.err;
  // K % W == 0 with K = 512 (default) and 8192 (large), W up to 64.
  EXPECT_TRUE(contains(r.out, "tp_allgather_gemm                          tp    1,2,4,8,16,32,64   1,2,4,8,16,32,64\n"))
      << r.out;
  // The categories offered are the ones with problems; 'test' names where its problems are.
  r = run_pkb({"list", "-c", "tset"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "unknown category 'tset'; use one of coll, dp, tp")) << r.err;
  EXPECT_FALSE(contains(r.err, "test")) << r.err;
  r = run_pkb({"list", "-c", "test"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "no problems of category 'test' are loaded: the harness's self-test problems")) << r.err;
  r = run_pkb({"--problem-dir", std::string(PKB_SOURCE_DIR) + "/tests/candidates/problems", "--reference-lib",
               PKB_GALLERY_REFS, "list", "-c", "test"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "test_roofline_lie")) << r.out;
  r = run_pkb({"show", "14_gemm_allgather"});
  if (r.code == 0) EXPECT_TRUE(contains(r.out, "tp_gemm_allgather"));
  r = run_pkb({"show", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "slug = \"coll_broadcast\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "PKB_REFERENCE(\"coll_broadcast\"")) << r.out;
}

// The binary does not link libtorch: only the processes that run torch load the rank library
// beside it, and the parent reads which references it holds from its file (a section that
// PKB_REFERENCE writes), one for every reference/*.cpp.
TEST(Cli, TheParentLoadsNoLibtorch) {
  auto ldd = pkb::launch::run_process({"ldd", PKB_BIN}, 60);
  ASSERT_EQ(ldd.exit_code, 0) << ldd.err;
  EXPECT_FALSE(contains(ldd.out, "libtorch")) << ldd.out;
  std::string lib = (std::filesystem::path(PKB_BIN).parent_path() / "libpkb_rank.so").string();
  std::vector<std::string> slugs = pkb::io::elf_section_strings(lib, "pkb_references"), files;
  for (auto& e : std::filesystem::directory_iterator(std::string(PKB_SOURCE_DIR) + "/reference"))
    if (e.path().extension() == ".cpp") files.push_back(e.path().stem().string());
  std::sort(slugs.begin(), slugs.end());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(slugs, files);
  std::vector<std::string> gallery = pkb::io::elf_section_strings(PKB_GALLERY_REFS, "pkb_references");
  std::sort(gallery.begin(), gallery.end());
  EXPECT_EQ(gallery, (std::vector<std::string>{"test_empty", "test_roofline_lie"}));  // its references.cpp
}

// A pkb binary without its rank library beside it: one line naming the fix, exit 2, for a
// command and for a rank mode alike.
TEST(Cli, ABinaryWithoutItsRankLibrarySaysRebuild) {
  std::string dir = temp_dir("nolib");
  std::filesystem::copy_file(PKB_BIN, dir + "/pkb");
  auto list = pkb::launch::run_process({dir + "/pkb", "list"}, 60);
  EXPECT_EQ(list.exit_code, 2);
  EXPECT_EQ(list.err, "pkb: error: the rank library " + dir + "/libpkb_rank.so is missing; rebuild pkb "
                      "(scripts/build.sh), which puts it beside the binary\n");
  auto worker = pkb::launch::run_process({dir + "/pkb", "__worker"}, 60);
  EXPECT_EQ(worker.exit_code, 2);
  EXPECT_TRUE(contains(worker.err, "cannot load the rank library " + dir + "/libpkb_rank.so")) << worker.err;
  EXPECT_TRUE(contains(worker.err, "rebuild pkb (scripts/build.sh)")) << worker.err;
}

// A --reference-lib that is not a library of references: one line naming what it is.
TEST(Cli, AReferenceLibraryThatIsNotOneIsOneLine) {
  std::string dir = temp_dir("notalib"), text = dir + "/refs.so";
  std::ofstream(text) << "not a library\n";
  PkbRun r = run_pkb({"--reference-lib", text, "list"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "pkb: error: " + text + ": not a 64-bit ELF shared object\n");
  r = run_pkb({"--reference-lib", dir + "/missing.so", "list"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "pkb: error: " + dir + "/missing.so: cannot be read\n");
  // An ELF file, but without references: the pkb binary itself.
  r = run_pkb({"--reference-lib", PKB_BIN, "list"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, std::string("pkb: error: ") + PKB_BIN + ": holds no pkb reference (no PKB_REFERENCE of "
                   "include/pkb/reference.hpp)\n");
  // References named in its section, but it does not load: the parent says so before any rank
  // starts (it loads the rank library to check).
  std::ofstream(dir + "/bad.c") << "__attribute__((used, section(\"pkb_references\"))) static const char a[] = "
                                   "\"test_empty\";\nextern void pkb_missing_symbol(void);\n"
                                   "__attribute__((constructor)) static void f(void) { pkb_missing_symbol(); }\n";
  auto cc = pkb::launch::run_process({"cc", "-shared", "-fPIC", dir + "/bad.c", "-o", dir + "/bad.so"}, 120);
  ASSERT_EQ(cc.exit_code, 0) << cc.err;
  r = run_pkb({"--problem-dir", std::string(PKB_SOURCE_DIR) + "/tests/candidates/problems", "--reference-lib",
               dir + "/bad.so", "dryrun", "-p", "test_empty", "--device", "cpu"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "pkb: error: cannot load reference library " + dir + "/bad.so: " + dir +
                       "/bad.so: undefined symbol: pkb_missing_symbol\n");
}

TEST(Cli, SharedMemoryCommunicatorTakesUpTo64Ranks) {
  PkbRun r = run_pkb({"dryrun", "-p", "coll_allreduce", "--device", "cpu", "-w", "65", "--ref-comm", "shm"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "--ref-comm shm takes up to 64 ranks, not 65; use --ref-comm gloo")) << r.err;
}

TEST(Cli, SelftestOnTheCpuDevice) {
  PkbRun r = run_pkb({"selftest", "--device", "cpu", "-w", "4", "--barrier-iters", "200"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "comm=gloo")) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 7) << r.out;  // header, column names, 4 ranks, ok
}

TEST(Cli, NoCommunicationDryrunStillRuns) {
  PkbRun r = run_pkb({"dryrun", "-p", "coll_allreduce", "--device", "cpu", "-w", "4", "--no-comm"});
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST(Cli, SizesReplacedOnTheCommandLine) {
  PkbRun r = run_pkb({"dryrun", "-p", "coll_allgather", "--device", "cpu", "-w", "2", "-n", "1", "--size",
                      "large:M=24,N=40"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "bf16[2,24,40]")) << r.out;
  r = run_pkb({"dryrun", "-p", "coll_allgather", "--device", "cpu", "-w", "2", "--size", "Q=3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "pkb: error: coll_allgather: 'Q=3' in size 'Q=3' must be NAME=VALUE with NAME one of M, N"))
      << r.err;
  r = run_pkb({"dryrun", "-p", "tp_allgather_gemm", "--device", "cpu", "-w", "4", "--size", "K=1001"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(contains(r.err, "needs K % W == 0, which fails at W=4 with sizes 'K=1001'; pick another --world-size or --size"))
      << r.err;
}

// pkb doctor says which sandbox layers this kernel offers, in words and in JSON.
TEST(Cli, DoctorReportsTheSandboxLayers) {
  PkbRun r = run_pkb({"doctor"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "sandbox: environment allow-list")) << r.out;
  // Which kinds of candidate this build runs, and where nvcc is.
  EXPECT_TRUE(contains(r.out, "candidates this build runs:\n  CUDA (.cu) ")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n  ThunderKittens (.cu with kittens.cuh) ")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n  Triton/Python (.py) ")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n  CPU device (.cpp)                      yes, ")) << r.out;
  PkbRun j = run_pkb({"doctor", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  // The CPU's cores and whether it has bf16 instructions, as /proc/cpuinfo says.
  const nlohmann::json cpu = nlohmann::json::parse(j.out)["cpu"];
  EXPECT_EQ(cpu["cores"].get<unsigned>(), std::thread::hardware_concurrency());
  std::ifstream info("/proc/cpuinfo");
  std::string text((std::istreambuf_iterator<char>(info)), std::istreambuf_iterator<char>());
  bool bf16 = contains(text, " avx512_bf16") || contains(text, " amx_bf16") || contains(text, " bf16");
  EXPECT_EQ(cpu["bf16"], bf16) << cpu;
  EXPECT_TRUE(contains(r.out, "CPU: " + std::to_string(std::thread::hardware_concurrency()) +
                                  " cores, bf16 instructions: " + (bf16 ? "yes\n" : "no (")))
      << r.out;
  // The libtorch found when pkb was configured (build/built_with.hpp), which records carry too.
  std::string torch = nlohmann::json::parse(j.out)["torch_version"];
  EXPECT_EQ(torch.rfind("2.11.", 0), 0u) << torch;
  EXPECT_TRUE(contains(r.out, "libtorch " + torch + "\n")) << r.out;
  std::string nvcc = nlohmann::json::parse(j.out)["candidates"]["cuda"]["nvcc"];
  if (nvcc.empty())
    EXPECT_TRUE(contains(r.out, "no: pkb was built without the CUDA toolkit")) << r.out;
  else
    EXPECT_TRUE(contains(r.out, "yes, nvcc " + nvcc)) << r.out;
  EXPECT_TRUE(contains(r.out, "processes (seccomp): yes")) << r.out;
  EXPECT_TRUE(contains(j.out, "\"landlock_abi\"")) << j.out;
}

// docs/results.md lists every exit code pkb has (eval/verdict.hpp's Exit).
TEST(Cli, EveryExitCodeIsDocumented) {
  std::ifstream h(std::string(PKB_SOURCE_DIR) + "/src/eval/verdict.hpp"), d(std::string(PKB_SOURCE_DIR) + "/docs/results.md");
  std::string header((std::istreambuf_iterator<char>(h)), std::istreambuf_iterator<char>());
  std::string doc((std::istreambuf_iterator<char>(d)), std::istreambuf_iterator<char>());
  std::string exits = header.substr(header.find("enum Exit"), header.find("};", header.find("enum Exit")) - header.find("enum Exit"));
  int codes = 0;
  for (size_t at = 0; (at = exits.find(" = ", at)) != std::string::npos; at += 3) {
    std::string code = exits.substr(at + 3, exits.find(',', at) - at - 3);
    ++codes;
    EXPECT_TRUE(contains(doc, "\n| " + code + " | ")) << "exit code " << code << " is not in docs/results.md";
  }
  EXPECT_EQ(codes, 9);  // 0-7 and 130
}
