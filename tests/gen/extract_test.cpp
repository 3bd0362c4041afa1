// Picking the candidate out of an answer: the backend's tag first, the largest block next,
// and a reason when there is none.
#include <gtest/gtest.h>

#include "gen/extract.hpp"

using namespace pkb::gen;

const std::vector<std::string> kCuda = {"cuda", "cu", "cpp", "c++"};

TEST(GenExtract, PrefersTheBackendsTagThenTheLargestSuchBlock) {
  std::string text =
      "Plan.\n```python\nprint('a much longer block than the others, a much longer block')\n```\n"
      "```cuda\nsmall();\n```\n"
      "```cuda\nlarger(); larger();\n```\n"
      "```cpp\nhost();\n```\n";
  Extraction x = extract_code(text, kCuda);
  ASSERT_TRUE(x.found);
  EXPECT_EQ(x.code, "larger(); larger();\n");
  EXPECT_NE(x.why.find("tagged cuda"), std::string::npos) << x.why;
  EXPECT_NE(x.why.find("4 complete blocks"), std::string::npos) << x.why;
}

TEST(GenExtract, FallsBackToLaterTagsAndThenTheLargestBlock) {
  EXPECT_EQ(extract_code("```cpp\nx\n```\n```\nyy\n```\n", kCuda).code, "x\n");
  Extraction x = extract_code("```\nshort\n```\n~~~text\nthe longest one\n~~~\n", kCuda);
  EXPECT_EQ(x.code, "the longest one\n");
  EXPECT_NE(x.why.find("none tagged cuda"), std::string::npos) << x.why;
}

TEST(GenExtract, LongerFencesHoldShorterOnes) {
  std::string text = "````cuda\n// shows a fence:\n```\nnot the end\n```\n````\n";
  EXPECT_EQ(extract_code(text, kCuda).code, "// shows a fence:\n```\nnot the end\n```\n");
}

TEST(GenExtract, TagIsCaseInsensitiveAndInfoStringsAreAllowed) {
  EXPECT_EQ(extract_code("```CUDA title=\"k.cu\"\nk();\n```", kCuda).code, "k();\n");
}

TEST(GenExtract, SaysWhyWhenThereIsNoCode) {
  Extraction none = extract_code("I cannot help with that.", kCuda);
  EXPECT_FALSE(none.found);
  EXPECT_EQ(none.why, "no fenced code block in the answer");
  Extraction cut = extract_code("Here:\n```cuda\nint main() {\n", kCuda);
  EXPECT_FALSE(cut.found);
  EXPECT_NE(cut.why.find("stops inside one"), std::string::npos);
  EXPECT_FALSE(extract_code("```cuda\n```\n", kCuda).found);  // empty blocks are not code
}
