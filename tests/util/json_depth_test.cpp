// The nesting depth of JSON text, read without parsing: what every JSON text from outside is
// checked against before it is parsed (util/json_depth.h).
#include "util/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace hearth {
namespace {

TEST(JsonDepth, CountsArraysAndObjectsNotStrings) {
  EXPECT_EQ(json_nesting_depth("1"), 0u);
  EXPECT_EQ(json_nesting_depth("[]"), 1u);
  EXPECT_EQ(json_nesting_depth(R"({"a":[1,{"b":[]}],"c":{}})"), 4u);
  EXPECT_EQ(json_nesting_depth(R"(["[[[[", "\"[[[", {"k[": "]]]"}])"), 2u);
  EXPECT_EQ(json_nesting_depth(R"("\\")"), 0u);
  EXPECT_EQ(json_nesting_depth(R"(["\\", [[]]])"), 3u);
  // Siblings do not add up; closing more than was opened does not go below zero.
  EXPECT_EQ(json_nesting_depth("[[],[],[[]]]"), 3u);
  EXPECT_EQ(json_nesting_depth("]]]][[]"), 2u);
}

TEST(JsonDepth, StopsPastTheCapAndBoundsTheLimit) {
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  EXPECT_EQ(json_nesting_depth(deep, 10), 11u);
  EXPECT_FALSE(json_depth_ok(deep));
  const std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(json_depth_ok(at_limit));
  EXPECT_FALSE(json_depth_ok("[" + at_limit + "]"));
  EXPECT_TRUE(json_depth_ok(R"({"s":")" + std::string(100000, '{') + R"("})"));
}

}  // namespace
}  // namespace hearth
