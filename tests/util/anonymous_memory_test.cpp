#include "util/anonymous_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

#include "util/error.h"

namespace hearth {
namespace {

TEST(AnonymousMemory, HugePageRegionsStartOnA2MiBBoundaryAndAreZeroedAndWritable) {
  const size_t n = (size_t{5} << 20) + 123;
  AnonymousMemory m = AnonymousMemory::accounted(n, "test");
  ASSERT_NE(m.data(), nullptr);
  EXPECT_EQ(m.size(), n);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % (size_t{2} << 20), 0u);
  for (size_t i = 0; i < n; i += 4096) EXPECT_EQ(m.data()[i], 0) << i;
  EXPECT_EQ(m.data()[n - 1], 0);
  m.data()[0] = 1;
  m.data()[n - 1] = 2;  // the last byte is inside the mapping
  EXPECT_EQ(m.data()[0] + m.data()[n - 1], 3);
}

TEST(AnonymousMemory, MovesOwnershipAndEmptyIsNull) {
  AnonymousMemory a = AnonymousMemory::lazy(4096, "test");
  a.data()[100] = 7;
  uint8_t* p = a.data();
  AnonymousMemory b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[100], 7);
  AnonymousMemory c;
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(AnonymousMemory::accounted(0, "test").data(), nullptr);
  EXPECT_EQ(AnonymousMemory::lazy(0, "test").data(), nullptr);
}

TEST(AnonymousMemory, ALazyPoolIsWritableWhereverItIsTouched) {
  const size_t n = size_t{64} << 20;
  AnonymousMemory m = AnonymousMemory::lazy(n, "pool");
  ASSERT_NE(m.data(), nullptr);
  m.data()[n / 2] = 5;
  m.data()[n - 1] = 6;
  EXPECT_EQ(m.data()[n / 2] + m.data()[n - 1] + m.data()[0], 11);
}

// The KV pool is read a head's rows at a time from every block of a layer: its blocks must
// start on huge-page boundaries like the weights' (one TLB entry per 2 MiB).
TEST(AnonymousMemory, ALazyPoolStartsOnA2MiBBoundary) {
  AnonymousMemory m = AnonymousMemory::lazy((size_t{3} << 20) + 5, "pool");
  ASSERT_NE(m.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % (size_t{2} << 20), 0u);
}

TEST(AnonymousMemory, AnImpossibleSizeIsAClearError) {
  try {
    AnonymousMemory m = AnonymousMemory::accounted(SIZE_MAX - 4096, "weights");
    FAIL() << "reserved " << m.size() << " bytes";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("weights"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hearth
