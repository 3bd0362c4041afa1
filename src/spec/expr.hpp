// Formulas of problem specs: shapes ("M // W"), constraints ("512 % W == 0"),
// rooflines ("2 * (W - 1) / W * M * N * 2") and input initialisers ("randint(-8, 8)").
//
// Values are doubles. `/` divides exactly, `//` floors, `%` is a floored modulo.
// Comparisons and && || ! give 1 or 0. Functions: min, max, abs, floor, ceil,
// roundup(a, b) (a rounded up to a multiple of b), cdiv(a, b), log2, pow,
// if(cond, a, b). Variables are looked up in a Vars map at evaluation.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace pkb::spec {

using Vars = std::map<std::string, double>;

// A formula error; `column` counts from 1 within the formula text, 0 when unknown.
struct ExprError : std::runtime_error {
  ExprError(const std::string& what, int column) : std::runtime_error(what), column(column) {}
  int column;
};

class Expr {
 public:
  struct Node;
  Expr() = default;
  static Expr parse(const std::string& text);  // throws ExprError

  double eval(const Vars& vars) const;         // throws ExprError
  // Evaluates and insists on a whole number (shapes, sizes).
  int64_t eval_int(const Vars& vars) const;

  const std::string& text() const { return text_; }
  bool empty() const { return !root_; }
  std::set<std::string> variables() const;

  // For initialisers written as one call: "randint(-8, 8)" -> "randint" and its arguments;
  // a bare name ("randn") is a call without arguments.
  bool is_call() const;
  std::string call_name() const;
  std::vector<Expr> call_args() const;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace pkb::spec
