#include <gtest/gtest.h>

#include "spec/expr.hpp"

using pkb::spec::Expr;
using pkb::spec::ExprError;
using pkb::spec::Vars;

TEST(Expr, Arithmetic) {
  Vars v{{"M", 1024}, {"N", 512}, {"W", 4}, {"rank", 1}};
  EXPECT_EQ(Expr::parse("M // W").eval_int(v), 256);
  EXPECT_EQ(Expr::parse("2 * (W - 1) / W * M").eval(v), 1536);
  EXPECT_EQ(Expr::parse("roundup(1000, W)").eval_int(v), 1000);
  EXPECT_EQ(Expr::parse("roundup(1001, W)").eval_int(v), 1004);
  EXPECT_EQ(Expr::parse("cdiv(1001, W)").eval_int(v), 251);
  EXPECT_EQ(Expr::parse("-7 % 4").eval_int(v), 1);  // floored, like Python
  EXPECT_EQ(Expr::parse("-7 // 2").eval_int(v), -4);
  EXPECT_EQ(Expr::parse("max(1, W / 8, min(3, 2))").eval(v), 2);
  EXPECT_EQ(Expr::parse("if(rank == 0, W, 0)").eval_int(v), 0);
  EXPECT_EQ(Expr::parse("512 % W == 0 && W <= 8").eval(v), 1);
  EXPECT_EQ(Expr::parse("!(W > 2) || 0").eval(v), 0);
}

TEST(Expr, Errors) {
  Vars v{{"M", 10}, {"W", 4}};
  try {
    Expr::parse("M + (W");
    FAIL();
  } catch (const ExprError& e) {
    EXPECT_NE(std::string(e.what()).find("missing ')'"), std::string::npos);
    EXPECT_GT(e.column, 0);
  }
  EXPECT_THROW(Expr::parse("M $ W"), ExprError);
  EXPECT_THROW(Expr::parse("K * 2").eval(v), ExprError);         // unknown variable
  EXPECT_THROW(Expr::parse("M / (W - 4)").eval(v), ExprError);   // division by zero
  EXPECT_THROW(Expr::parse("M / W").eval_int(v), ExprError);     // 2.5 is no size
  EXPECT_THROW(Expr::parse("sqrt(M)").eval(v), ExprError);       // unknown function
  EXPECT_THROW(Expr::parse("min()").eval(v), ExprError);
}

TEST(Expr, Calls) {
  Expr e = Expr::parse("randint(-8, W * 2)");
  ASSERT_TRUE(e.is_call());
  EXPECT_EQ(e.call_name(), "randint");
  auto args = e.call_args();
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[0].eval({}), -8);
  EXPECT_EQ(args[1].eval({{"W", 3}}), 6);
  EXPECT_TRUE(Expr::parse("randn").is_call());
  EXPECT_EQ(Expr::parse("randn").call_args().size(), 0u);
  EXPECT_FALSE(Expr::parse("1 + 2").is_call());
  EXPECT_EQ(Expr::parse("M * N + W").variables(), (std::set<std::string>{"M", "N", "W"}));
}
