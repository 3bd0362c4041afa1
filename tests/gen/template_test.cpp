// Templates: {name} placeholders, literal braces elsewhere, and an error naming any
// unknown placeholder.
#include <gtest/gtest.h>

#include "gen/error.hpp"
#include "gen/template.hpp"

using namespace pkb::gen;

TEST(GenTemplate, FillsPlaceholdersAndKeepsOtherBraces) {
  Context ctx = {{"name", "allreduce"}, {"code", "int f() { return {x}; }"}};
  EXPECT_EQ(render("{name}: if (a) { b; } {}{ name}{name", ctx, "t"), "allreduce: if (a) { b; } {}{ name}{name");
  // Values are inserted as they are: a value's own braces are never filled.
  EXPECT_EQ(render("[{code}]", ctx, "t"), "[int f() { return {x}; }]");
}

TEST(GenTemplate, UnknownPlaceholderIsNamed) {
  try {
    render("hello {nmae}", {{"name", "x"}}, "prompts.toml template 'greeting'");
    FAIL() << "no error";
  } catch (const GenError& e) {
    EXPECT_STREQ(e.what(), "prompts.toml template 'greeting' uses unknown placeholder {nmae}; use one of: name");
  }
  EXPECT_THROW(check_placeholders("{a} {b}", {"a"}, "t"), GenError);
  EXPECT_NO_THROW(check_placeholders("{a} {{ b }}", {"a"}, "t"));
  EXPECT_EQ(placeholders("{a} {b_2} {3c} {a}"), (std::set<std::string>{"a", "b_2"}));
}
