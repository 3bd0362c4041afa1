#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "spec/registry.hpp"

namespace fs = std::filesystem;
using pkb::spec::Registry;
using pkb::spec::SpecError;

namespace {

std::string spec_text(const std::string& slug, int id) {
  return "slug = \"" + slug + "\"\nid = " + std::to_string(id) + "\nstem = \"" + std::to_string(id) + "_" +
         slug.substr(5) +
         "\"\ncategory = \"coll\"\norigin = \"o\"\ndescription = \"d\"\n[sizes]\ndefault = { M = 8 }\n"
         "[[inputs]]\nname = \"x\"\nshape = [\"M\"]\ndtype = \"dt\"\ninit = \"randn\"\n"
         "[[outputs]]\nname = \"y\"\nshape = [\"M\"]\ndtype = \"dt\"\n";
}

class RegistryFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("pkb-reg-" + std::to_string(::getpid()));
    fs::create_directories(root_ / "problems");
    fs::create_directories(root_ / "reference");
  }
  void TearDown() override { fs::remove_all(root_); }
  void add(const std::string& slug, int id, bool with_source = true) {
    std::ofstream(root_ / "problems" / (slug + ".toml")) << spec_text(slug, id);
    if (with_source) std::ofstream(root_ / "reference" / (slug + ".cpp")) << "// " << slug;
  }
  std::string error(const std::vector<std::string>& compiled) {
    try {
      Registry::load({(root_ / "problems").string()}, compiled);
    } catch (const SpecError& e) {
      return e.what();
    }
    return "no error";
  }
  fs::path root_;
};

}  // namespace

TEST_F(RegistryFiles, FindsBySlugIdAndStem) {
  add("coll_one", 1);
  add("coll_two", 2);
  Registry r = Registry::load({(root_ / "problems").string()}, {"coll_one", "coll_two"});
  EXPECT_EQ(r.find("coll_two").id, 2);
  EXPECT_EQ(r.find("2").slug, "coll_two");
  EXPECT_EQ(r.find("1_one").slug, "coll_one");
  try {
    r.find("tw");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean coll_two"), std::string::npos) << e.what();
  }
  EXPECT_THROW(r.find("nothing_like_it"), SpecError);
}

TEST_F(RegistryFiles, SpecWithoutReferenceSource) {
  add("coll_one", 1, false);
  EXPECT_NE(error({"coll_one"}).find("no reference source; write reference/coll_one.cpp"), std::string::npos);
}

TEST_F(RegistryFiles, SpecWhoseReferenceIsNotCompiled) {
  add("coll_one", 1);
  EXPECT_NE(error({}).find("not compiled into pkb"), std::string::npos);
}

TEST_F(RegistryFiles, ReferenceWithoutSpec) {
  add("coll_one", 1);
  EXPECT_NE(error({"coll_one", "coll_ghost"}).find("reference coll_ghost has no spec"), std::string::npos);
}

TEST_F(RegistryFiles, DuplicateIds) {
  add("coll_one", 1);
  add("coll_two", 1);
  EXPECT_NE(error({"coll_one", "coll_two"}).find("id 1 is already used"), std::string::npos);
}
