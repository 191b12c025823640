// Hand-built blocks with known contents -> known values. These pin the on-disk bit layouts, so
// a layout regression fails here with a message naming the element.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant/dequantize.h"

namespace hearth {
namespace {

constexpr uint16_t kOne = 0x3c00;   // f16 1.0
constexpr uint16_t kHalf = 0x3800;  // f16 0.5
constexpr uint16_t kQuarter = 0x3400;
constexpr uint16_t kMinusOne = 0xbc00;

template <typename Block>
std::vector<float> decode(TensorType t, const Block& b) {
  EXPECT_EQ(sizeof(Block), traits(t).block_bytes);
  std::vector<float> y(traits(t).block_elems);
  dequantize_row(t, &b, y.data(), static_cast<int64_t>(y.size()));
  return y;
}

TEST(BlockLayout, GeometryMatchesTypeTable) {
  EXPECT_EQ(sizeof(BlockQ4_0), traits(TensorType::Q4_0).block_bytes);
  EXPECT_EQ(sizeof(BlockQ4_1), traits(TensorType::Q4_1).block_bytes);
  EXPECT_EQ(sizeof(BlockQ5_0), traits(TensorType::Q5_0).block_bytes);
  EXPECT_EQ(sizeof(BlockQ5_1), traits(TensorType::Q5_1).block_bytes);
  EXPECT_EQ(sizeof(BlockQ8_0), traits(TensorType::Q8_0).block_bytes);
  EXPECT_EQ(sizeof(BlockQ4_K), traits(TensorType::Q4_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ5_K), traits(TensorType::Q5_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ6_K), traits(TensorType::Q6_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ8_K), traits(TensorType::Q8_K).block_bytes);
}

TEST(BlockLayout, Q4_0LowNibblesFirstThenHigh) {
  BlockQ4_0 b{};
  b.d = kOne;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = decode(TensorType::Q4_0, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], static_cast<float>(j - 8)) << "element " << j << " = low nibble of qs[j] - 8";
    EXPECT_EQ(y[j + 16], static_cast<float>(7 - j)) << "element " << j + 16 << " = high nibble";
  }
}

TEST(BlockLayout, Q4_1ScaleThenMin) {
  BlockQ4_1 b{};
  b.d = kHalf;
  b.m = kMinusOne;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = decode(TensorType::Q4_1, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * static_cast<float>(j) - 1.0f) << "element " << j;
    EXPECT_EQ(y[j + 16], 0.5f * static_cast<float>(15 - j) - 1.0f) << "element " << j + 16;
  }
}

TEST(BlockLayout, Q5_0HighBitsAreLittleEndianUint32) {
  BlockQ5_0 b{};
  b.d = kOne;
  for (int j = 0; j < 16; ++j) b.qs[j] = 0x53;  // low nibble 3, high nibble 5
  // Bits 0, 9, 16 and 31 set: elements 0, 9 (low nibbles) and 16, 31 (high nibbles) get +16.
  b.qh[0] = 0x01;
  b.qh[1] = 0x02;
  b.qh[2] = 0x01;
  b.qh[3] = 0x80;
  const auto y = decode(TensorType::Q5_0, b);
  for (int j = 0; j < 32; ++j) {
    const bool high = j == 0 || j == 9 || j == 16 || j == 31;
    const int q = (j < 16 ? 3 : 5) + (high ? 16 : 0);
    EXPECT_EQ(y[j], static_cast<float>(q - 16)) << "element " << j;
  }
}

TEST(BlockLayout, Q5_1HighBitsAndMin) {
  BlockQ5_1 b{};
  b.d = kQuarter;
  b.m = kOne;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(15 | (1 << 4));
  b.qh[0] = 0x80;  // element 7
  b.qh[3] = 0x40;  // element 30
  const auto y = decode(TensorType::Q5_1, b);
  for (int j = 0; j < 32; ++j) {
    const int q = (j < 16 ? 15 : 1) + ((j == 7 || j == 30) ? 16 : 0);
    EXPECT_EQ(y[j], 0.25f * static_cast<float>(q) + 1.0f) << "element " << j;
  }
}

TEST(BlockLayout, Q8_0SignedBytes) {
  BlockQ8_0 b{};
  b.d = kQuarter;
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j * 8 - 128);
  const auto y = decode(TensorType::Q8_0, b);
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(y[j], 0.25f * static_cast<float>(j * 8 - 128)) << "element " << j;
}

// 6-bit scales {1, 2, 3, 4, 17, 35, 50, 63} and mins {0, 5, 10, 15, 20, 40, 60, 33}, packed by
// hand per the GGUF layout (scales/mins 4-7 split into low nibbles + top 2 bits).
constexpr uint8_t kPackedScales[12] = {0x41, 0x82, 0xc3, 0xc4, 0x40, 0x85,
                                       0xca, 0x8f, 0x41, 0x83, 0xc2, 0x1f};
constexpr int kSc[8] = {1, 2, 3, 4, 17, 35, 50, 63};
constexpr int kMin[8] = {0, 5, 10, 15, 20, 40, 60, 33};

TEST(BlockLayout, KQuantScaleMinPacking) {
  for (int j = 0; j < 8; ++j) {
    uint8_t sc = 0, m = 0;
    kquant_scale_min(j, kPackedScales, sc, m);
    EXPECT_EQ(sc, kSc[j]) << "scale of sub-block " << j;
    EXPECT_EQ(m, kMin[j]) << "min of sub-block " << j;
  }
  uint8_t sc[8], m[8], packed[12];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(kSc[j]);
    m[j] = static_cast<uint8_t>(kMin[j]);
  }
  kquant_pack_scale_mins(sc, m, packed);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(packed[i], kPackedScales[i]) << "byte " << i;
}

TEST(BlockLayout, Q4_KSubBlocksAndNibbles) {
  BlockQ4_K b{};
  b.d = kOne;
  b.dmin = kHalf;
  std::memcpy(b.scales, kPackedScales, 12);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      b.qs[32 * c + l] = static_cast<uint8_t>((l & 15) | ((15 - (l & 15)) << 4));
  const auto y = decode(TensorType::Q4_K, b);
  for (int i = 0; i < 256; ++i) {
    const int sub = i / 32, l = i % 32;
    const int q = (sub % 2 == 0) ? (l & 15) : 15 - (l & 15);  // even sub-block: low nibbles
    const float want =
        static_cast<float>(kSc[sub]) * static_cast<float>(q) - 0.5f * static_cast<float>(kMin[sub]);
    EXPECT_EQ(y[i], want) << "element " << i << " (sub-block " << sub << ")";
  }
  // Spot values, written out: element 0 = 1*0 - 0, element 33 = 2*14 - 2.5,
  // element 255 = 63*0 - 16.5, element 130 = 17*2 - 10.
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[33], 25.5f);
  EXPECT_EQ(y[255], -16.5f);
  EXPECT_EQ(y[130], 24.0f);
}

TEST(BlockLayout, Q5_KFifthBits) {
  BlockQ5_K b{};
  b.d = kOne;
  b.dmin = kHalf;
  std::memcpy(b.scales, kPackedScales, 12);
  for (int i = 0; i < 128; ++i) b.qs[i] = 0x21;  // low nibble 1, high nibble 2
  b.qh[0] = 0x01;                                // bit 0 -> element 0
  b.qh[1] = 0x02;                                // bit 1 -> element 32 + 1
  b.qh[2] = 0x80;                                // bit 7 -> element 64*3 + 32 + 2 = 226
  b.qh[31] = 0x10;                               // bit 4 -> element 64*2 + 31 = 159
  const auto y = decode(TensorType::Q5_K, b);
  for (int i = 0; i < 256; ++i) {
    const int sub = i / 32;
    const bool high = i == 0 || i == 33 || i == 226 || i == 159;
    const int q = ((sub % 2 == 0) ? 1 : 2) + (high ? 16 : 0);
    const float want =
        static_cast<float>(kSc[sub]) * static_cast<float>(q) - 0.5f * static_cast<float>(kMin[sub]);
    EXPECT_EQ(y[i], want) << "element " << i;
  }
  EXPECT_EQ(y[0], 17.0f);
  EXPECT_EQ(y[226], 63.0f * 18.0f - 16.5f);
}

TEST(BlockLayout, Q6_KQuartersAndSignedScales) {
  BlockQ6_K b{};
  b.d = kHalf;
  for (int k = 0; k < 16; ++k) b.scales[k] = static_cast<int8_t>(k - 8);
  // All levels 0 (-> q = -32) except:
  b.ql[0] = 0x21;       // element 0 low nibble 1, element 64 low nibble 2
  b.ql[32] = 0x43;      // element 32 low nibble 3, element 96 low nibble 4
  b.qh[0] = 0xe4;       // 2-bit highs: element 0 -> 0, 32 -> 1, 64 -> 2, 96 -> 3
  b.ql[64 + 5] = 0xf0;  // second half: element 128 + 64 + 5 = 197 low nibble 15
  b.qh[32 + 5] = 0x30;  // element 197 high bits 3
  const auto y = decode(TensorType::Q6_K, b);
  auto want = [](int i, int q) {
    return (0.5f * static_cast<float>(i / 16 - 8)) * static_cast<float>(q - 32);
  };
  for (int i = 0; i < 256; ++i) {
    int q = 0;
    if (i == 0) q = 1;
    if (i == 32) q = 3 | (1 << 4);
    if (i == 64) q = 2 | (2 << 4);
    if (i == 96) q = 4 | (3 << 4);
    if (i == 197) q = 63;
    EXPECT_EQ(y[i], want(i, q)) << "element " << i << " (scale " << i / 16 << ")";
  }
  EXPECT_EQ(y[0], 124.0f);   // (0.5 * -8) * (1 - 32)
  EXPECT_EQ(y[96], -20.0f);  // (0.5 * -2) * (52 - 32)
  EXPECT_EQ(y[197], 62.0f);  // (0.5 * 4) * (63 - 32)
}

TEST(BlockLayout, Q8_KScaleIsFloat) {
  BlockQ8_K b{};
  b.d = 0.125f;
  for (int i = 0; i < 256; ++i) b.qs[i] = static_cast<int8_t>(i - 128);
  const auto y = decode(TensorType::Q8_K, b);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(y[i], 0.125f * static_cast<float>(i - 128));
}

}  // namespace
}  // namespace hearth
