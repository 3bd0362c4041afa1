#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "spec/spec.hpp"

namespace fs = std::filesystem;
using pkb::spec::load_spec;
using pkb::spec::SpecError;

namespace {

const char* kGood = R"TOML(slug = "tp_demo"
id = 99
stem = "99_demo"
category = "tp"
origin = "a test"
description = "x"
constraints = ["K % W == 0"]

[vars]
Kl = "K // W"
half = "Kl // 2"

[sizes]
default = { M = 64, N = 32, K = 16 }
large = { M = 128, N = 64, K = 32 }

[[inputs]]
name = "a"
shape = ["M", "Kl"]
dtype = "dt"
init = "randn(0.5)"

[[outputs]]
name = "y"
shape = ["<= M * W", "N"]
dtype = "fp32"
atol = 1e-3

[args]
mode = "fast"
steps = 5
splits = [1, 2, 3]

[roofline]
flops = "2 * M * N * K"
)TOML";

class SpecFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pkb-spec-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& slug, const std::string& text) {
    std::string p = (dir_ / (slug + ".toml")).string();
    std::ofstream(p) << text;
    return p;
  }
  // The error message for a spec with `from` replaced by `to`.
  std::string error_for(const std::string& from, const std::string& to) {
    std::string text = kGood;
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    try {
      load_spec(write("tp_demo", text));
    } catch (const SpecError& e) {
      return e.what();
    }
    return "no error";
  }
  fs::path dir_;
};

}  // namespace

TEST_F(SpecFiles, LoadsAGoodSpec) {
  auto s = load_spec(write("tp_demo", kGood));
  EXPECT_EQ(s.slug, "tp_demo");
  EXPECT_EQ(s.vars.size(), 2u);
  EXPECT_EQ(s.vars[0].first, "Kl");  // dependency order, not alphabetical
  auto v = s.vars_for("large", 4, 1);
  EXPECT_EQ(v.at("Kl"), 8);
  EXPECT_EQ(v.at("half"), 4);
  EXPECT_TRUE(s.outputs[0].shape[0].dynamic);
  EXPECT_EQ(s.outputs[0].atol.value(), 1e-3);
  EXPECT_FALSE(s.outputs[0].rtol.has_value());
  EXPECT_EQ(s.args.size(), 3u);
  EXPECT_EQ(s.world_size_error(4), "");
  EXPECT_NE(s.world_size_error(3).find("K % W == 0"), std::string::npos);
  EXPECT_NE(s.world_size_error(100).find("1 to 64"), std::string::npos);
}

TEST_F(SpecFiles, SizesArePresetsOrReplacements) {
  auto s = load_spec(write("tp_demo", kGood));
  using Sizes = std::map<std::string, int64_t>;
  EXPECT_EQ(s.size_values("large"), (Sizes{{"K", 32}, {"M", 128}, {"N", 64}}));
  EXPECT_EQ(s.size_values("large:M=7,K=8"), (Sizes{{"K", 8}, {"M", 7}, {"N", 64}}));
  EXPECT_EQ(s.size_values("N=5"), (Sizes{{"K", 16}, {"M", 64}, {"N", 5}}));  // on the default preset
  EXPECT_EQ(s.vars_for("K=40", 4, 0).at("Kl"), 10);
  EXPECT_NE(s.world_size_error(4, "K=18").find("K % W == 0"), std::string::npos);
  auto error = [&](const std::string& size) {
    try {
      s.size_values(size);
    } catch (const SpecError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("huge").find("no size 'huge'; this problem has default, large"), std::string::npos);
  EXPECT_NE(error("huge:M=2").find("no size 'huge'"), std::string::npos);
  EXPECT_NE(error("Q=3").find("'Q=3' in size 'Q=3' must be NAME=VALUE with NAME one of K, M, N"), std::string::npos);
  EXPECT_NE(error("large:M").find("must be NAME=VALUE"), std::string::npos);
  EXPECT_NE(error("M=0").find("size M must be a positive integer, not '0'"), std::string::npos);
  EXPECT_NE(error("M=12x").find("not '12x'"), std::string::npos);
  EXPECT_NE(error("M=").find("not ''"), std::string::npos);
}

TEST_F(SpecFiles, MalformedToml) {
  std::string e = error_for("[sizes]", "[sizes");
  EXPECT_NE(e.find("tp_demo.toml:"), std::string::npos) << e;
  EXPECT_NE(e.find("malformed TOML"), std::string::npos) << e;
}

TEST_F(SpecFiles, UnknownKeyNamesTheFixAndLine) {
  std::string e = error_for("shape = [\"M\", \"Kl\"]", "shapes = [\"M\", \"Kl\"]");
  EXPECT_NE(e.find("tp_demo.toml:19: unknown key 'shapes'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'shape'"), std::string::npos) << e;
}

TEST_F(SpecFiles, MissingField) {
  std::string e = error_for("dtype = \"fp32\"\n", "");
  EXPECT_NE(e.find("missing 'dtype' in [[outputs]] 'y'"), std::string::npos) << e;
  EXPECT_NE(e.find("add dtype ="), std::string::npos) << e;
}

TEST_F(SpecFiles, ShapeFormulaThatDoesNotParse) {
  std::string e = error_for("\"M\", \"Kl\"", "\"M\", \"Kl +\"");
  EXPECT_NE(e.find("tp_demo.toml:19"), std::string::npos) << e;
  EXPECT_NE(e.find("Kl +"), std::string::npos) << e;
}

TEST_F(SpecFiles, UnknownNameInShape) {
  std::string e = error_for("\"M\", \"Kl\"", "\"M\", \"Q\"");
  EXPECT_NE(e.find("unknown name 'Q'"), std::string::npos) << e;
  EXPECT_NE(e.find("[vars]"), std::string::npos) << e;
}

TEST_F(SpecFiles, SlugMustMatchFileAndCategory) {
  EXPECT_NE(error_for("slug = \"tp_demo\"", "slug = \"tp_other\"").find("does not match the file name"),
            std::string::npos);
  EXPECT_NE(error_for("category = \"tp\"", "category = \"dp\"").find("must start with its category"),
            std::string::npos);
  EXPECT_NE(error_for("category = \"tp\"", "category = \"tensor\"").find("unknown category"), std::string::npos);
}

TEST_F(SpecFiles, BadDtypeInitAndVars) {
  EXPECT_NE(error_for("dtype = \"fp32\"", "dtype = \"float\"").find("unknown dtype 'float'"), std::string::npos);
  EXPECT_NE(error_for("randn(0.5)", "gaussian").find("init must be one of"), std::string::npos);
  EXPECT_NE(error_for("half = \"Kl // 2\"", "half = \"Kl // 2 + zz\"").find("unknown name 'zz'"),
            std::string::npos);
  EXPECT_NE(error_for("Kl = \"K // W\"", "Kl = \"half * 2\"").find("cycle"), std::string::npos);
}

TEST_F(SpecFiles, SizesMustGiveWholeShapes) {
  // K = 16 does not split over W = 3 ranks into whole rows unless a constraint says so.
  std::string text = kGood;
  for (auto [from, to] : {std::pair<std::string, std::string>{"constraints = [\"K % W == 0\"]", ""},
                          {"Kl = \"K // W\"", "Kl = \"K / W\""}})
    text.replace(text.find(from), from.size(), to);
  std::string e;
  try {
    load_spec(write("tp_demo", text));
  } catch (const SpecError& x) {
    e = x.what();
  }
  EXPECT_NE(e.find("at W=3"), std::string::npos) << e;
  EXPECT_NE(e.find("not a whole number"), std::string::npos) << e;
  EXPECT_NE(e.find("add a constraint"), std::string::npos) << e;
}

TEST_F(SpecFiles, PresetsNameTheSameSizes) {
  std::string e = error_for("large = { M = 128, N = 64, K = 32 }", "large = { M = 128, N = 64 }");
  EXPECT_NE(e.find("other sizes than the others"), std::string::npos) << e;
}

// Roofline bytes follow the run's element type (dt_bytes), in every shipped problem that
// reads dt tensors: --dtype fp32 must not report bf16 traffic.
TEST(ShippedProblems, RooflineBytesFollowTheElementType) {
  int checked = 0;
  for (auto& f : fs::directory_iterator(std::string(PKB_SOURCE_DIR) + "/problems")) {
    auto s = load_spec(f.path().string());
    bool reads_dt = false;
    for (auto& t : s.inputs) reads_dt |= t.dtype == "dt";
    if (!reads_dt || s.roofline.hbm_bytes.empty()) continue;
    auto bf16 = s.roofline_vars("default", 4, 0, "bf16"), fp32 = s.roofline_vars("default", 4, 0, "fp32");
    EXPECT_EQ(bf16.at("dt_bytes"), 2);
    EXPECT_EQ(fp32.at("dt_bytes"), 4);
    EXPECT_GT(s.roofline.hbm_bytes.eval(fp32), s.roofline.hbm_bytes.eval(bf16)) << s.slug;
    if (!s.roofline.data_bytes.empty())
      EXPECT_EQ(s.roofline.data_bytes.eval(fp32), 2 * s.roofline.data_bytes.eval(bf16)) << s.slug;
    ++checked;
  }
  EXPECT_GE(checked, 23);
}

TEST_F(SpecFiles, MismatchIsASmallFraction) {
  std::string ok = kGood;
  ok.replace(ok.find("atol = 1e-3"), 11, "atol = 1e-3\nmismatch = 1e-3");
  EXPECT_EQ(load_spec(write("tp_demo", ok)).outputs[0].mismatch, 1e-3);
  EXPECT_EQ(load_spec(write("tp_demo", kGood)).outputs[0].mismatch, 0);
  std::string e = error_for("atol = 1e-3", "mismatch = 0.5");
  EXPECT_NE(e.find("mismatch is the fraction of elements allowed outside atol/rtol, from 0 to 0.01"), std::string::npos)
      << e;
  EXPECT_NE(error_for("atol = 1e-3", "mismatch = -1e-3").find("not -0.001"), std::string::npos);
}

TEST_F(SpecFiles, TiesSaysWhichAnswersAreEquallyValid) {
  std::string ok = kGood;
  ok.replace(ok.find("atol = 1e-3"), 11, "atol = 1e-3\nties = \"rows of equal key in any order\"");
  EXPECT_EQ(load_spec(write("tp_demo", ok)).outputs[0].ties, "rows of equal key in any order");
  EXPECT_EQ(load_spec(write("tp_demo", kGood)).outputs[0].ties, "");
  std::string e = error_for("atol = 1e-3", "ties = \" \"");
  EXPECT_NE(e.find("ties says which answers are equally valid"), std::string::npos) << e;
  e = error_for("atol = 1e-3", "mismatch = 1e-3\nties = \"any order\"");
  EXPECT_NE(e.find("ties and mismatch exclude each other"), std::string::npos) << e;
  e = error_for("init = \"randn(0.5)\"", "init = \"randn(0.5)\"\nties = \"x\"");
  EXPECT_NE(e.find("ties"), std::string::npos) << e;  // inputs have no ties
}

// The shipped outputs judged by ties are those whose references have a check() and whose
// tie-breaks tests/problems/ties_test.cpp tries: a new one needs both.
TEST(ShippedProblems, TiesAreDeclaredWhereChecksExist) {
  std::vector<std::string> with_ties;
  for (auto& f : fs::directory_iterator(std::string(PKB_SOURCE_DIR) + "/problems")) {
    auto s = load_spec(f.path().string());
    for (auto& o : s.outputs)
      if (!o.ties.empty()) with_ties.push_back(s.slug + "." + o.name);
  }
  std::sort(with_ties.begin(), with_ties.end());
  EXPECT_EQ(with_ties, (std::vector<std::string>{"dp_dinov2_knn.topk_labels", "gnn_negative_scoring_rank.ranks"}));
}
