// The sweep's parts without processes: what a path says, discovery, the problem filter,
// resume keys and shards, the results file (resume, torn lines, the lock), the lines
// recorded for children that died, the Slurm script, the progress line and which
// evaluations share a reference timing.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "support.hpp"
#include "sweep/candidates.hpp"
#include "sweep/progress.hpp"
#include "sweep/results_file.hpp"
#include "sweep/runner.hpp"
#include "sweep/slurm.hpp"

using namespace pkb::sweep;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

fs::path fresh_dir(const std::string& name) { return pkbtest::temp_dir(name); }

void touch(const fs::path& p, const std::string& text = "// candidate\n") {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The registry pkb itself loads: problems/ and the references compiled in (reference/*.cpp).
const pkb::spec::Registry& registry() {
  static pkb::spec::Registry reg = [] {
    std::vector<std::string> slugs;
    for (auto& e : fs::directory_iterator(std::string(PKB_SOURCE_DIR) + "/reference"))
      if (e.path().extension() == ".cpp") slugs.push_back(e.path().stem().string());
    return pkb::spec::Registry::load({std::string(PKB_SOURCE_DIR) + "/problems"}, slugs);
  }();
  return reg;
}

}  // namespace

TEST(CandidatePath, GeneratedAndHandWrittenLayouts) {
  std::string key, run, backend;
  int sample = -1;
  ASSERT_TRUE(parse_candidate_path("out/solutions_cuda/gpt-5-run1/coll_allreduce/sample_12.cu", key, run, sample, backend));
  EXPECT_EQ(key, "coll_allreduce");
  EXPECT_EQ(run, "gpt-5-run1");
  EXPECT_EQ(sample, 12);
  EXPECT_EQ(backend, "cuda");
  ASSERT_TRUE(parse_candidate_path("/abs/solutions_cpu/coll_gather.cpp", key, run, sample, backend));
  EXPECT_EQ(key, "coll_gather");
  EXPECT_EQ(run, "solutions_cpu");
  EXPECT_EQ(sample, 0);
  EXPECT_EQ(backend, "cpu");
  ASSERT_TRUE(parse_candidate_path("solutions_tk/m/14/sample_0.cu", key, run, sample, backend));
  EXPECT_EQ(backend, "tk");  // the folder names the backend, not the extension
  EXPECT_EQ(key, "14");      // ids and stems resolve later, through the registry
  ASSERT_TRUE(parse_candidate_path("1_allreduce.py", key, run, sample, backend));
  EXPECT_EQ(run, "solutions_triton");
  EXPECT_FALSE(parse_candidate_path("solutions_triton/coll_allreduce.toml", key, run, sample, backend));
  EXPECT_FALSE(parse_candidate_path("solutions_cpu/m/coll_allreduce/prompt.md", key, run, sample, backend));
  // .py candidates are the triton backend; under a cpu/ folder they run on the CPU device.
  ASSERT_TRUE(parse_candidate_path("solutions_triton/cpu/coll_gather.py", key, run, sample, backend));
  EXPECT_EQ(backend, "triton");
  EXPECT_EQ(run, "cpu");
  EXPECT_EQ(device_of_candidate("solutions_triton/cpu/coll_gather.py", backend), "cpu");
  EXPECT_EQ(device_of_candidate("solutions_triton/coll_allreduce.py", backend), "cuda");
  EXPECT_EQ(device_of_candidate("cpu/solutions_triton/m/coll_allreduce/sample_0.py", backend), "cuda");
  EXPECT_EQ(device_of_candidate("solutions_tk/coll_allreduce.cu", "tk"), "cuda");
  EXPECT_EQ(device_of_candidate("solutions_cpu/coll_allreduce.cpp", "cpu"), "cpu");
}

TEST(Discover, FindsCandidatesInProblemOrderAndSaysWhatItSkipped) {
  fs::path d = fresh_dir("discover");
  touch(d / "solutions_cpu/m2/coll_allgather/sample_0.cpp");
  touch(d / "solutions_cpu/m1/coll_allreduce/sample_1.cpp", "// one\n");
  touch(d / "solutions_cpu/m1/coll_allreduce/sample_0.cpp", "// zero\n");
  touch(d / "solutions_cpu/m1/coll_allreduce/prompt.md");
  touch(d / "solutions_cpu/m1/coll_allreduce/.hidden/sample_0.cpp");
  touch(d / "solutions_cpu/m1/coll_allreduce/sample_0/turn_1/candidate.cpp");  // a pkb agent sample's turns
  touch(d / "solutions_cpu/m1/no_such_problem/sample_0.cpp");
  touch(d / "solutions_cpu/2_allgather.cpp");  // by original stem
  Discovery found = discover({(d / "solutions_cpu").string()}, registry());
  std::vector<std::string> got;
  for (auto& c : found.candidates) got.push_back(c.problem + " " + c.run + " " + std::to_string(c.sample));
  EXPECT_EQ(got, (std::vector<std::string>{"coll_allreduce m1 0", "coll_allreduce m1 1", "coll_allgather m2 0",
                                           "coll_allgather solutions_cpu 0"}));
  ASSERT_EQ(found.skipped.size(), 1u);
  EXPECT_NE(found.skipped[0].find("'no_such_problem' is not a problem"), std::string::npos) << found.skipped[0];
  EXPECT_EQ(found.candidates[0].device, "cpu");
  EXPECT_EQ(found.candidates[0].category, "coll");
  EXPECT_EQ(found.candidates[0].problem_id, 1);
  EXPECT_EQ(found.candidates[0].sha256, "b25fe4393242982fd4c0df42704c948d1b819f04b172d5e363764585e8a91599");  // sha256sum of "// zero\n"
}

TEST(SelectProblems, AllCategoryOrList) {
  EXPECT_EQ(select_problems("all", registry()).size(), registry().all().size());
  auto coll = select_problems("coll", registry());
  EXPECT_EQ(coll.size(), 8u);
  EXPECT_EQ(select_problems("coll_scatter,1,2_allgather", registry()),
            (std::vector<std::string>{"coll_scatter", "coll_allreduce", "coll_allgather"}));
  try {
    select_problems("coll_allreduc", registry());
    FAIL() << "an unknown problem was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean coll_allreduce"), std::string::npos) << e.what();
  }
}

TEST(TaskKey, ChangesWithWhatIsMeasuredNotWithTheSeed) {
  Candidate c;
  c.path = "solutions_cpu/m/coll_allreduce/sample_0.cpp";
  c.problem = "coll_allreduce";
  c.device = "cpu";
  c.sha256 = "aa";
  Settings s;
  std::string k = task_key(c, 4, s);
  EXPECT_NE(k, task_key(c, 2, s));
  Settings more_trials = s;
  more_trials.eval.trials = 7;
  EXPECT_NE(k, task_key(c, 4, more_trials));
  Candidate edited = c;
  edited.sha256 = "bb";
  EXPECT_NE(k, task_key(edited, 4, s));
  Candidate twin = c;  // an identical sample elsewhere is an evaluation of its own
  twin.path = "solutions_cpu/m/coll_allreduce/sample_1.cpp";
  EXPECT_NE(k, task_key(twin, 4, s));
  Settings longer = s;
  longer.timeout = 99;
  EXPECT_EQ(k, task_key(c, 4, longer));
}

TEST(Shard, SharesCoverTheGridOnceInOrder) {
  std::vector<Task> grid(10);
  for (int i = 0; i < 10; ++i) grid[i].key = std::to_string(i);
  std::vector<std::string> seen;
  for (int i = 0; i < 3; ++i)
    for (auto& t : shard(grid, i, 3)) seen.push_back(t.key);
  EXPECT_EQ(seen, (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}));
  EXPECT_EQ(shard(grid, 0, 3).size(), 3u);
  EXPECT_TRUE(shard(std::vector<Task>(2), 0, 4).empty());  // more nodes than work: some get none
}

TEST(ResultsFileTest, ResumesCutsATornLineAndKeepsOthersOut) {
  fs::path d = fresh_dir("results");
  std::string path = (d / "r.jsonl").string();
  {
    ResultsFile f(path);
    EXPECT_EQ(f.lines(), 0u);
    f.append({{"problem", "coll_allreduce"}, {"run", {{"seed", "42"}}}, {"sweep", {{"task", "a"}}}});
    f.append({{"problem", "coll_allreduce"}, {"run", {{"seed", "42"}}}, {"sweep", {{"task", "b"}}}});
    EXPECT_THROW(ResultsFile second(path), std::runtime_error) << "a second sweep on the same file must be refused";
  }
  std::ofstream(path, std::ios::app) << "not json\n{\"problem\": \"coll_allreduce\", \"sweep\": {\"task\": \"c\"";
  ResultsFile f(path);
  EXPECT_TRUE(f.has("a"));
  EXPECT_TRUE(f.has("b"));
  EXPECT_FALSE(f.has("c"));  // torn: it runs again
  EXPECT_EQ(f.torn_bytes(), std::string("{\"problem\": \"coll_allreduce\", \"sweep\": {\"task\": \"c\"").size());
  EXPECT_EQ(f.bad_lines(), 1u);
  f.append({{"problem", "coll_allreduce"}, {"sweep", {{"task", "c"}}}});
  std::string text = read_text(path);
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);  // a, b, "not json", c
  EXPECT_NE(text.find("\nnot json\n"), std::string::npos) << "a line that is not JSON is left alone";
  EXPECT_EQ(text.find("\"task\": \"c\""), std::string::npos) << "the torn fragment is gone:\n" << text;
}

namespace {

Task sample_task() {
  Task t;
  t.candidate.path = "s/m/coll_allreduce/sample_3.cpp";
  t.candidate.problem = "coll_allreduce";
  t.candidate.problem_id = 1;
  t.candidate.category = "coll";
  t.candidate.run = "m";
  t.candidate.sample = 3;
  t.candidate.backend = "cpu";
  t.candidate.device = "cpu";
  t.candidate.sha256 = "ab";
  t.world = 4;
  t.seed = 99;
  t.key = "key";
  return t;
}

}  // namespace

TEST(RecordFor, TheChildsJsonGetsTheSweepFields) {
  pkb::launch::ProcessResult child;
  child.exit_code = 1;
  json line = record_for(sample_task(), Settings{}, child,
                         R"({"schema":"pkb.eval/1","problem":"coll_allreduce","verdict":"wrong","speedup":null,"x":1})",
                         2.0, 60)
                  .to_json();
  EXPECT_EQ(line["verdict"], "wrong");
  EXPECT_EQ(line["sweep"], (json{{"run", "m"}, {"sample", 3}, {"task", "key"}}));
  EXPECT_EQ(line["flags"], json::array());
  EXPECT_EQ(line["x"], 1) << "a key pkb does not know is kept as it was";
  // A record of a later schema's verdict is one pkb cannot read: reported as a crash.
  line = record_for(sample_task(), Settings{}, child, R"({"schema":"pkb.eval/1","problem":"p","verdict":"exploded"})",
                    2.0, 60)
             .to_json();
  EXPECT_EQ(line["verdict"], "crash");
  EXPECT_NE(line["message"].get<std::string>().find("pkb eval wrote a result pkb cannot read"), std::string::npos)
      << line["message"];
}

TEST(RecordFor, AChildThatLeftNoJsonStillGetsALine) {
  Settings s;
  s.eval.trials = 2;
  pkb::launch::ProcessResult killed;
  killed.signal = SIGKILL;
  json line = record_for(sample_task(), s, killed, "", 5.0, 60).to_json();
  EXPECT_EQ(line["schema"], "pkb.eval/1");
  EXPECT_EQ(line["verdict"], "crash");
  EXPECT_EQ(line["message"], "pkb eval was killed by signal 9 (Killed)");
  EXPECT_EQ(line["flags"], json::array({"no_result"}));
  EXPECT_EQ(line["run"]["seed"], "99");
  EXPECT_EQ(line["run"]["trials"], 2);
  EXPECT_EQ(line["candidate"]["sha256"], "ab");

  pkb::launch::ProcessResult overran;
  overran.timed_out = true;
  overran.signal = SIGKILL;
  line = record_for(sample_task(), s, overran, "", 60.0, 60).to_json();
  EXPECT_EQ(line["verdict"], "timeout");
  EXPECT_EQ(line["message"], "pkb eval overran the sweep's deadline of 60 s and was killed");

  pkb::launch::ProcessResult internal;
  internal.exit_code = 7;
  internal.err = "rank 0 says hello\npkb: internal error: cannot write the result\n";
  line = record_for(sample_task(), s, internal, "{\"truncated", 1.0, 60).to_json();
  EXPECT_EQ(line["verdict"], "crash");
  EXPECT_EQ(line["message"],
            "pkb eval failed (exit code 7) without writing its result: pkb: internal error: cannot write the result");

  pkb::launch::ProcessResult timeout;
  timeout.exit_code = 5;
  EXPECT_EQ(record_for(sample_task(), s, timeout, "", 1.0, 60).verdict, pkb::eval::Verdict::timeout);

  pkb::launch::ProcessResult usage;
  usage.exit_code = 2;
  usage.err = "pkb: error: bad\n";
  EXPECT_THROW(record_for(sample_task(), s, usage, "", 1.0, 60), EvalRejected);
}

TEST(EvalArgv, PassesTheSettingsOnAndOnlyThoseGiven) {
  RunnerOptions o;
  o.pkb = "/bin/pkb";
  o.global_args = {"--root", "/r"};
  o.settings.eval.warmup = 0;
  o.settings.eval.timing = false;
  o.settings.timeout = 2.5;
  auto a = eval_argv(sample_task(), o, "/tmp/x.json");
  std::string line;
  for (auto& s : a) line += s + " ";
  EXPECT_EQ(line,
            "/bin/pkb --root /r eval --problem coll_allreduce --solution s/m/coll_allreduce/sample_3.cpp --world-size 4 "
            "--device cpu --warmup 0 --no-timing --seed 99 --timeout 2.5 --json /tmp/x.json ");
  // No seed: pkb eval draws its own; a dtype is passed on.
  Task t = sample_task();
  t.seed.reset();
  o.settings.eval.dtype = "fp32";
  line.clear();
  for (auto& s : eval_argv(t, o, "/tmp/x.json")) line += s + " ";
  EXPECT_EQ(line.find("--seed"), std::string::npos) << line;
  EXPECT_NE(line.find("--dtype fp32"), std::string::npos) << line;
}

// Evaluations side by side (--parallel) each get their GPUs' share of the CPUs, so their
// pinned timed threads never meet; the share reaches pkb eval as --cpus.
TEST(EvalArgv, EvaluationsSideBySideGetTheirGpusShareOfTheCpus) {
  std::vector<int> cpus(16);
  for (int c = 0; c < 16; ++c) cpus[c] = c;
  EXPECT_EQ(cpu_share(cpus, {0}, 8), "0,1");
  EXPECT_EQ(cpu_share(cpus, {6, 7}, 8), "12,13,14,15");
  EXPECT_EQ(cpu_share({4, 5, 9, 10, 11, 20}, {1}, 2), "10,11,20");  // the allowed CPUs, in order
  EXPECT_EQ(cpu_share(cpus, {2}, 32), "");  // fewer CPUs than GPUs: a slot with none of its own, pkb eval decides
  RunnerOptions o;
  o.pkb = "/bin/pkb";
  std::string line;
  for (auto& s : eval_argv(sample_task(), o, "/tmp/x.json", "12,13")) line += s + " ";
  EXPECT_NE(line.find("--cpus 12,13 --json /tmp/x.json"), std::string::npos) << line;
}

TEST(Slurm, ScriptRunsOneShareOfTheGridPerArrayTask) {
  SlurmJob job;
  job.results_dir = "/shared/results";
  job.workdir = "/home/u/it's here";
  job.nodes = 3;
  job.gpus_per_node = 8;
  job.argv = {"/opt/pkb", "sweep", "--solutions", "solutions_cuda", "--seed", "7"};
  job.sbatch_options = {"--partition=gpu"};
  std::string s = slurm_script(job);
  for (const char* want :
       {"#!/bin/bash\n", "#SBATCH --array=0-2\n", "#SBATCH --nodes=1\n", "#SBATCH --exclusive\n",
        "#SBATCH --gres=gpu:8\n", "#SBATCH --partition=gpu\n", "#SBATCH --output=/shared/results/slurm-%A_%a.log\n",
        "cd '/home/u/it'\\''s here'\n",
        "exec '/opt/pkb' 'sweep' '--solutions' 'solutions_cuda' '--seed' '7' \\\n  --shard \"$SLURM_ARRAY_TASK_ID/3\" "
        "--out '/shared/results'/task_\"$SLURM_ARRAY_TASK_ID\".jsonl\n"})
    EXPECT_NE(s.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << s;
}

// pkb eval --launcher slurm: one task, no array, the command as it is, its log by job id.
TEST(Slurm, ScriptForOneEvaluationIsOneTask) {
  SlurmJob job;
  job.name = "pkb-eval";
  job.array = false;
  job.results_dir = "/shared/job";
  job.workdir = "/home/u";
  job.gpus_per_node = 4;
  job.argv = {"/opt/pkb", "eval", "-p", "coll_allreduce", "--json", "/shared/job/result.json"};
  std::string s = slurm_script(job);
  EXPECT_EQ(s.find("--array"), std::string::npos) << s;
  EXPECT_EQ(s.find("--shard"), std::string::npos) << s;
  for (const char* want : {"#SBATCH --job-name=pkb-eval\n", "#SBATCH --gres=gpu:4\n", "#SBATCH --exclusive\n",
                           "#SBATCH --output=/shared/job/slurm-%j.log\n",
                           "exec '/opt/pkb' 'eval' '-p' 'coll_allreduce' '--json' '/shared/job/result.json'\n"})
    EXPECT_NE(s.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << s;
}

// The progress line: done of total, failures, the time left at the pace so far (counting
// down between ends), what runs now.
TEST(Progress, LineSaysDoneFailuresTimeLeftAndWhatRuns) {
  Progress p;
  p.total = 10;
  p.to_build = 4;
  p.built = 2;
  p.running = {"coll_allreduce W=4 m/sample_0"};
  EXPECT_EQ(p.line(10), "[..........] 0/10 | 0 failed | estimating time left | built 2/4 | coll_allreduce W=4 m/sample_0");
  p.done = 4;
  p.verdicts = {{"correct", 2}, {"wrong", 1}, {"timeout", 1}};
  p.elapsed_at_last_end_s = 120;  // 30 s an evaluation: 6 left, 180 s
  p.elapsed_s = 160;              // 40 s later: 140 s left
  p.built = 4;
  p.running.push_back("coll_gather W=4 m/sample_0");
  ASSERT_TRUE(p.seconds_left().has_value());
  EXPECT_DOUBLE_EQ(*p.seconds_left(), 140);
  EXPECT_EQ(p.line(10), "[####......] 4/10 | 2 failed | ~2 min left | coll_allreduce W=4 m/sample_0 (+1 more)");
  p.elapsed_s = 1000;
  EXPECT_DOUBLE_EQ(*p.seconds_left(), 0) << "an estimate overrun stays at zero, never negative";
}

TEST(Progress, DurationsAsPeopleReadThem) {
  EXPECT_EQ(duration_text(45), "45 s");
  EXPECT_EQ(duration_text(89.4), "89 s");
  EXPECT_EQ(duration_text(150), "3 min");
  EXPECT_EQ(duration_text(12 * 60), "12 min");
  EXPECT_EQ(duration_text(2 * 3600 + 5 * 60), "2 h 05 min");
  EXPECT_EQ(duration_text(3 * 3600 - 10), "3 h 00 min");
}

