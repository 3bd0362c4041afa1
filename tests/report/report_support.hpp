// What the report tests share: headless Chromium, found on PATH, and the page's layout at a
// laptop's width measured in it (tests/report/check_layout.py).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "launch/subprocess.hpp"

inline std::string chromium_or_skip() {
  std::string chromium = pkb::launch::which("chromium");
  if (chromium.empty()) chromium = pkb::launch::which("chromium-browser");
  return chromium;
}

// CI installs Chromium (scripts/test.sh): there a skip would hide a test that never runs.
#define NEED_CHROMIUM(chromium)                                                                               \
  if ((chromium).empty()) {                                                                                   \
    if (std::string(std::getenv("CI") ? std::getenv("CI") : "") == "true") FAIL() << "CI has no chromium on PATH"; \
    GTEST_SKIP() << "no chromium on PATH (Debian package chromium; scripts/test.sh installs it)";            \
  }

// The page at a laptop's width (1366 px): nothing wider than the window, no chart label over
// another or over a bar (tests/report/check_layout.py measures the page in Chromium).
inline void expect_layout_fits(const std::string& chromium, const std::string& page, const std::string& shot = "") {
  std::vector<std::string> argv = {PKB_PYTHON, std::string(PKB_SOURCE_DIR) + "/tests/report/check_layout.py", chromium,
                                   page, "--width", "1366"};
  if (!shot.empty()) argv.insert(argv.end(), {"--shot", shot});
  auto check = pkb::launch::run_process(argv, 600);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}
