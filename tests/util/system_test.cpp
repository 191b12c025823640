#include "util/system.h"

#include <gtest/gtest.h>

namespace hearth {
namespace {

TEST(ByteSize, ParsesUnits) {
  EXPECT_EQ(parse_byte_size("1024"), 1024u);
  EXPECT_EQ(parse_byte_size("512M"), 512u << 20);
  EXPECT_EQ(parse_byte_size("2G"), size_t{2} << 30);
  EXPECT_EQ(parse_byte_size("1.5GiB"), size_t{3} << 29);
  EXPECT_EQ(parse_byte_size("4kb"), 4096u);
  EXPECT_FALSE(parse_byte_size(""));
  EXPECT_FALSE(parse_byte_size("G"));
  EXPECT_FALSE(parse_byte_size("12X"));
  EXPECT_FALSE(parse_byte_size("-5M"));
  EXPECT_FALSE(parse_byte_size("1e30G"));
}

TEST(System, AvailableMemoryIsPlausible) {
  auto m = available_memory_bytes();
  if (!m) GTEST_SKIP() << "no /proc/meminfo";
  EXPECT_GT(*m, size_t{16} << 20);
}

}  // namespace
}  // namespace hearth
