// What candidates cannot do, end to end on the CPU device (W=4), with the gallery's
// sandbox probes (tests/candidates/cpu): see no secret, write nowhere but their scratch,
// open no network connection, start no process, leave nothing running; and the timing
// attacks a sandbox does not stop: replays by content never pay, processes left behind
// without the sandbox are ended. Each also through --no-sandbox, where the probe must see
// what it looks for: that is what makes the sandboxed run's "nothing seen" mean something.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace pkbtest;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kGallery = std::string(PKB_SOURCE_DIR) + "/tests/candidates/cpu/";

struct Eval {
  PkbRun run;
  json result;
};

Eval eval(const std::string& candidate, std::vector<std::string> extra = {},
          const std::vector<std::pair<std::string, std::string>>& env = {}) {
  std::string out = temp_dir("sandbox-" + candidate) + "/r.json";
  std::vector<std::string> args = {"eval", "-p", "coll_allreduce", "-s", kGallery + candidate + ".cpp", "--device",
                                   "cpu", "-w", "4", "--trials", "3", "--warmup", "5", "--iters", "10",
                                   "--timeout", "30", "--json", out};
  args.insert(args.end(), extra.begin(), extra.end());
  Eval e;
  e.run = run_pkb(args, 600, env);
  std::ifstream f(out);
  e.result = json::parse(f, nullptr, false);
  return e;
}

std::string home_probe() {
  passwd* pw = getpwuid(getuid());
  return std::string(pw ? pw->pw_dir : "/nonexistent") + "/pkb-sandbox-probe.txt";
}

}  // namespace

TEST(Sandbox, SecretsInTheEnvironmentStayOutside) {
  std::vector<std::pair<std::string, std::string>> env = {{"OPENAI_API_KEY", "sk-test-not-a-key"},
                                                          {"PKB_TEST_SECRET_TOKEN", "x"}};
  Eval e = eval("read_secret", {}, env);
  EXPECT_EQ(e.result["verdict"], "correct") << e.run.out << e.run.err;
  // The probe sees a key when pkb lets it through: on purpose (--pass-env) or unconfined.
  Eval passed = eval("read_secret", {"--pass-env", "OPENAI_API_KEY"}, env);
  EXPECT_EQ(passed.result["verdict"], "wrong") << passed.run.out;
  Eval open = eval("read_secret", {"--no-sandbox"}, env);
  EXPECT_EQ(open.result["verdict"], "wrong") << open.run.out;
  EXPECT_TRUE(contains(open.run.out + open.run.err, "warning: --no-sandbox")) << open.run.out;
}

TEST(Sandbox, WritesOutsideTheScratchFolderAreDenied) {
  std::string results = temp_dir("sandbox-results");
  fs::remove(home_probe());
  Eval e = eval("write_files", {}, {{"PKB_TEST_RESULTS_DIR", results}});
  EXPECT_EQ(e.result["verdict"], "correct") << e.run.out << e.run.err;
  EXPECT_FALSE(fs::exists(results + "/pkb-sandbox-probe.txt"));
  EXPECT_FALSE(fs::exists(home_probe()));
  if (!e.result["sandbox"].value("filesystem", false)) GTEST_SKIP() << "no Landlock in this kernel: " << e.result["sandbox"];
  Eval open = eval("write_files", {"--no-sandbox"}, {{"PKB_TEST_RESULTS_DIR", results}});
  EXPECT_EQ(open.result["verdict"], "wrong") << open.run.out;
  EXPECT_TRUE(fs::exists(results + "/pkb-sandbox-probe.txt"));
  fs::remove(home_probe());
}

TEST(Sandbox, NetworkConnectionsAreDeniedAndReported) {
  int server = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(server, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(server, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(server, 16), 0);
  socklen_t len = sizeof a;
  getsockname(server, reinterpret_cast<sockaddr*>(&a), &len);
  std::string port = std::to_string(ntohs(a.sin_port));

  Eval e = eval("connect_tcp", {}, {{"PKB_TEST_PORT", port}});
  EXPECT_EQ(e.run.code, 6) << e.run.out << e.run.err;
  EXPECT_EQ(e.result["verdict"], "integrity_violation");
  EXPECT_TRUE(contains(e.result["message"], "socket(AF_INET/AF_INET6)")) << e.result["message"];
  EXPECT_EQ(accept(server, nullptr, nullptr), -1) << "a rank reached the server";
  EXPECT_TRUE(survivors(e.run.tag).empty());

  Eval open = eval("connect_tcp", {"--no-sandbox"}, {{"PKB_TEST_PORT", port}});
  EXPECT_EQ(open.result["verdict"], "correct") << open.run.out;
  int reached = 0;
  for (int fd; (fd = accept(server, nullptr, nullptr)) >= 0; ++reached) close(fd);
  EXPECT_EQ(reached, 4) << "every rank connects when unconfined";
  close(server);
}

TEST(Sandbox, AForkBombIsStoppedAndNothingIsLeft) {
  Eval e = eval("fork_bomb");
  EXPECT_EQ(e.result["verdict"], "integrity_violation") << e.run.out << e.run.err;
  EXPECT_TRUE(contains(e.result["message"], "starting a process")) << e.result["message"];
  EXPECT_LT(e.run.seconds, 120);
  EXPECT_TRUE(survivors(e.run.tag).empty());
}

TEST(Sandbox, ChildrenLeftRunningAreEndedWithTheGroup) {
  Eval e = eval("orphan_child", {"--no-sandbox"});
  EXPECT_EQ(e.result["verdict"], "correct") << e.run.out << e.run.err;
  EXPECT_GE(e.result["run"]["leftovers_ended"].get<int>(), 4);  // one child per rank at least
  EXPECT_NE(e.result["flags"].dump().find("left_processes"), std::string::npos) << e.result["flags"];
  EXPECT_TRUE(survivors(e.run.tag, 0.5).empty());
}

// Every call's inputs are written by its judge just before the call: a candidate that
// replays results by input content never finds one to replay, so its slow honest path is
// what is timed (a replay would show as a large speedup).
TEST(Integrity, ReplayByContentNeverPays) {
  Eval e = eval("replay_by_content");
  ASSERT_EQ(e.result["verdict"], "correct") << e.run.out << e.run.err;
  EXPECT_LT(e.result["speedup"].get<double>(), 1.0) << e.result["timing"];
}

// A sweep over the sandbox probes and a good candidate: every verdict as expected and the
// results file whole, whatever the probes tried.
TEST(Sandbox, SweepIsUnharmed) {
  std::string root = temp_dir("sandbox-sweep"), dir = root + "/solutions_cpu/probes/coll_allreduce";
  fs::create_directories(dir);
  const std::vector<std::pair<std::string, std::string>> probes = {
      {"read_secret", "correct"}, {"write_files", "correct"}, {"connect_tcp", "integrity_violation"},
      {"fork_bomb", "integrity_violation"}, {"orphan_child", "integrity_violation"}};
  std::map<int, std::string> expected;
  for (size_t k = 0; k < probes.size(); ++k) {
    fs::copy_file(kGallery + probes[k].first + ".cpp", dir + "/sample_" + std::to_string(k) + ".cpp");
    expected[int(k)] = probes[k].second;
  }
  fs::copy_file(std::string(PKB_SOURCE_DIR) + "/solutions_cpu/coll_allreduce.cpp", dir + "/sample_9.cpp");
  expected[9] = "correct";
  std::string results = root + "/results.jsonl";
  PkbRun r = run_pkb({"sweep", "--solutions", root + "/solutions_cpu", "--problems", "coll_allreduce", "--device",
                      "cpu", "-w", "4", "--trials", "3", "--warmup", "3", "--iters", "5", "--timeout", "30", "--out",
                      results},
                     1800, {{"OPENAI_API_KEY", "sk-test-not-a-key"}, {"PKB_TEST_RESULTS_DIR", root}});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::ifstream f(results);
  int lines = 0;
  for (std::string line; std::getline(f, line); ++lines) {
    json j = json::parse(line);
    int sample = j["sweep"]["sample"];
    EXPECT_EQ(j["verdict"], expected.at(sample)) << line.substr(0, 400);
  }
  EXPECT_EQ(lines, int(expected.size()));
  EXPECT_FALSE(fs::exists(root + "/pkb-sandbox-probe.txt"));
  EXPECT_TRUE(survivors(r.tag).empty());
}
