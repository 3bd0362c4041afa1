// An evaluation's settings (rank/settings.hpp): one table gives their flags, JSON keys and
// defaults, and a value goes to flags and JSON and back unchanged.
#include <gtest/gtest.h>

#include <set>

#include "rank/job.hpp"
#include "rank/settings.hpp"

using namespace pkb::rank;

TEST(Settings, DefaultsGiveNoFlags) { EXPECT_TRUE(to_flags(EvalSettings{}).empty()); }

TEST(Settings, FlagsAndJsonRoundTrip) {
  EvalSettings s;
  s.size = "large:M=4096";
  s.dtype = "fp32";
  s.trials = 7;
  s.warmup_budget_s = 0.25;
  s.iters = 40;
  s.interval_target = 0.05;
  s.timing = false;
  s.cache = "warm";
  EXPECT_EQ(to_flags(s), (std::vector<std::string>{"--size", "large:M=4096", "--dtype", "fp32", "--trials", "7",
                                                   "--warmup-budget", "0.25", "--iters", "40", "--interval", "0.05",
                                                   "--no-timing", "--cache", "warm"}));
  EXPECT_EQ(to_json(settings_from_json(to_json(s))), to_json(s));
  EXPECT_EQ(to_json(settings_from_json(nlohmann::json::object())), to_json(EvalSettings{}));  // keys it lacks: defaults
}

// Every setting has a flag and a key of its own; a job carries them to the ranks.
TEST(Settings, EachSettingItsOwnFlagAndKeyAndTheJobCarriesThem) {
  std::set<std::string> flags, keys;
  int n = 0;
  EvalSettings s;
  for_each_setting(s, [&](const Setting& x, auto&) {
    ++n;
    flags.insert(x.flag);
    keys.insert(x.key);
    EXPECT_EQ(std::string(x.flag).rfind("--", 0), 0u) << x.flag;
    EXPECT_FALSE(std::string(x.help).empty()) << x.flag;
  });
  EXPECT_EQ(static_cast<int>(flags.size()), n);
  EXPECT_EQ(static_cast<int>(keys.size()), n);
  Job j;
  j.block = 4;
  j.reference_drift = 0.1;
  j.seed = 12345678901234567ull;
  Job back = job_from_json(to_json(j));
  EXPECT_EQ(back.block, 4);
  EXPECT_DOUBLE_EQ(back.reference_drift, 0.1);
  EXPECT_EQ(back.seed, j.seed);
}
