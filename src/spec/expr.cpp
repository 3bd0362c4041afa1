#include "spec/expr.hpp"

#include <cctype>
#include <cmath>
#include <functional>
#include <sstream>

namespace pkb::spec {

struct Expr::Node {
  enum Kind { Number, Var, Unary, Binary, Call } kind;
  double number = 0;
  std::string name;  // variable, operator or function
  std::vector<std::shared_ptr<const Node>> args;
  int column = 0;
};

namespace {

using NodeP = std::shared_ptr<const Expr::Node>;

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  NodeP parse() {
    NodeP n = parse_or();
    skip();
    if (i_ < s_.size()) fail("unexpected '" + std::string(1, s_[i_]) + "'");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ExprError(what + " in formula \"" + s_ + "\"", static_cast<int>(i_) + 1);
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(const char* tok) {
    skip();
    size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(i_, n, tok) != 0) return false;
    // '/' must not swallow the first half of '//', nor '<' the first half of '<='.
    if (n == 1 && i_ + 1 < s_.size()) {
      char c = tok[0], d = s_[i_ + 1];
      if ((c == '/' && d == '/') || ((c == '<' || c == '>' || c == '!') && d == '=') ||
          (c == '&' && d == '&') || (c == '|' && d == '|'))
        return false;
    }
    i_ += n;
    return true;
  }
  NodeP make(Expr::Node::Kind k, std::string name, std::vector<NodeP> args, int col) {
    auto n = std::make_shared<Expr::Node>();
    n->kind = k;
    n->name = std::move(name);
    n->args = std::move(args);
    n->column = col;
    return n;
  }
  template <class Next>
  NodeP binary_level(Next next, std::initializer_list<const char*> ops) {
    NodeP lhs = next();
    for (;;) {
      bool matched = false;
      for (const char* op : ops) {
        int col = static_cast<int>(i_) + 1;
        if (eat(op)) {
          lhs = make(Expr::Node::Binary, op, {lhs, next()}, col);
          matched = true;
          break;
        }
      }
      if (!matched) return lhs;
    }
  }
  NodeP parse_or() { return binary_level([&] { return parse_and(); }, {"||"}); }
  NodeP parse_and() { return binary_level([&] { return parse_cmp(); }, {"&&"}); }
  NodeP parse_cmp() {
    return binary_level([&] { return parse_add(); }, {"==", "!=", "<=", ">=", "<", ">"});
  }
  NodeP parse_add() { return binary_level([&] { return parse_mul(); }, {"+", "-"}); }
  NodeP parse_mul() { return binary_level([&] { return parse_unary(); }, {"//", "*", "/", "%"}); }
  NodeP parse_unary() {
    int col = static_cast<int>(i_) + 1;
    if (eat("-")) return make(Expr::Node::Unary, "-", {parse_unary()}, col);
    if (eat("!")) return make(Expr::Node::Unary, "!", {parse_unary()}, col);
    if (eat("+")) return parse_unary();
    return parse_primary();
  }
  NodeP parse_primary() {
    skip();
    if (i_ >= s_.size()) fail("formula ends early");
    int col = static_cast<int>(i_) + 1;
    char c = s_[i_];
    if (eat("(")) {
      NodeP n = parse_or();
      if (!eat(")")) fail("missing ')'");
      return n;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      size_t used = 0;
      double v = 0;
      try {
        v = std::stod(s_.substr(i_), &used);
      } catch (...) {
        fail("bad number");
      }
      i_ += used;
      auto n = std::make_shared<Expr::Node>();
      n->kind = Expr::Node::Number;
      n->number = v;
      n->column = col;
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i_;
      while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '_')) ++j;
      std::string name = s_.substr(i_, j - i_);
      i_ = j;
      if (eat("(")) {
        std::vector<NodeP> args;
        if (!eat(")")) {
          do args.push_back(parse_or());
          while (eat(","));
          if (!eat(")")) fail("missing ')' after the arguments of " + name);
        }
        return make(Expr::Node::Call, name, std::move(args), col);
      }
      return make(Expr::Node::Var, name, {}, col);
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }

  const std::string& s_;
  size_t i_ = 0;
};

double eval_node(const Expr::Node& n, const Vars& vars, const std::string& text);

[[noreturn]] void eval_fail(const Expr::Node& n, const std::string& what, const std::string& text) {
  throw ExprError(what + " in formula \"" + text + "\"", n.column);
}

double call(const Expr::Node& n, const Vars& vars, const std::string& text) {
  auto arg = [&](size_t k) { return eval_node(*n.args.at(k), vars, text); };
  auto want = [&](size_t count) {
    if (n.args.size() != count)
      eval_fail(n, n.name + "() takes " + std::to_string(count) + " argument(s), got " +
                       std::to_string(n.args.size()),
                text);
  };
  const std::string& f = n.name;
  if (f == "if") {
    want(3);
    return arg(0) != 0 ? arg(1) : arg(2);
  }
  if (f == "min" || f == "max") {
    if (n.args.empty()) eval_fail(n, f + "() needs arguments", text);
    double v = arg(0);
    for (size_t k = 1; k < n.args.size(); ++k) v = f == "min" ? std::min(v, arg(k)) : std::max(v, arg(k));
    return v;
  }
  if (f == "abs") return want(1), std::fabs(arg(0));
  if (f == "floor") return want(1), std::floor(arg(0));
  if (f == "ceil") return want(1), std::ceil(arg(0));
  if (f == "log2") return want(1), std::log2(arg(0));
  if (f == "pow") return want(2), std::pow(arg(0), arg(1));
  if (f == "roundup" || f == "cdiv") {
    want(2);
    double a = arg(0), b = arg(1);
    if (b == 0) eval_fail(n, f + "() by zero", text);
    double q = std::ceil(a / b);
    return f == "cdiv" ? q : q * b;
  }
  eval_fail(n, "unknown function '" + f + "'", text);
}

double eval_node(const Expr::Node& n, const Vars& vars, const std::string& text) {
  switch (n.kind) {
    case Expr::Node::Number:
      return n.number;
    case Expr::Node::Var: {
      auto it = vars.find(n.name);
      if (it == vars.end()) eval_fail(n, "unknown variable '" + n.name + "'", text);
      return it->second;
    }
    case Expr::Node::Unary: {
      double v = eval_node(*n.args[0], vars, text);
      return n.name == "-" ? -v : (v == 0 ? 1 : 0);
    }
    case Expr::Node::Call:
      return call(n, vars, text);
    case Expr::Node::Binary: {
      double a = eval_node(*n.args[0], vars, text);
      const std::string& op = n.name;
      if (op == "&&") return a != 0 && eval_node(*n.args[1], vars, text) != 0;
      if (op == "||") return a != 0 || eval_node(*n.args[1], vars, text) != 0;
      double b = eval_node(*n.args[1], vars, text);
      if (op == "+") return a + b;
      if (op == "-") return a - b;
      if (op == "*") return a * b;
      if (op == "/" || op == "//" || op == "%") {
        if (b == 0) eval_fail(n, "division by zero", text);
        if (op == "/") return a / b;
        double q = std::floor(a / b);
        return op == "//" ? q : a - q * b;
      }
      if (op == "==") return a == b;
      if (op == "!=") return a != b;
      if (op == "<") return a < b;
      if (op == "<=") return a <= b;
      if (op == ">") return a > b;
      if (op == ">=") return a >= b;
      eval_fail(n, "unknown operator " + op, text);
    }
  }
  return 0;
}

void collect(const Expr::Node& n, std::set<std::string>& out) {
  if (n.kind == Expr::Node::Var) out.insert(n.name);
  for (auto& a : n.args) collect(*a, out);
}

}  // namespace

Expr Expr::parse(const std::string& text) {
  Expr e;
  e.text_ = text;
  e.root_ = Parser(text).parse();
  return e;
}

double Expr::eval(const Vars& vars) const {
  if (!root_) throw ExprError("empty formula", 0);
  return eval_node(*root_, vars, text_);
}

int64_t Expr::eval_int(const Vars& vars) const {
  double v = eval(vars);
  if (!std::isfinite(v) || std::floor(v) != v) {
    std::ostringstream os;
    os << "formula \"" << text_ << "\" gives " << v
       << ", not a whole number (use // for floor division, or constrain the sizes)";
    throw ExprError(os.str(), 0);
  }
  return static_cast<int64_t>(v);
}

std::set<std::string> Expr::variables() const {
  std::set<std::string> out;
  if (root_) collect(*root_, out);
  return out;
}

bool Expr::is_call() const {
  return root_ && (root_->kind == Node::Call || root_->kind == Node::Var);
}

std::string Expr::call_name() const { return is_call() ? root_->name : std::string(); }

std::vector<Expr> Expr::call_args() const {
  std::vector<Expr> out;
  if (!root_ || root_->kind != Node::Call) return out;
  for (auto& a : root_->args) {
    Expr e;
    e.root_ = a;
    e.text_ = text_;
    out.push_back(e);
  }
  return out;
}

}  // namespace pkb::spec
