// Dequantization against the synthetic-model goldens (golden/synthetic/dequant/<TYPE>.json):
// the first blocks bit-exactly, and the whole tensor read straight from the model file.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/shared_data.h"
#include "quant/dequantize.h"
#include "quant/quant_test_util.h"
#include "util/error.h"
#include "util/sha256.h"

namespace hearth {
namespace {

using nlohmann::json;

constexpr const char* kDir = "golden/synthetic/dequant";

class DequantGolden : public ::testing::TestWithParam<const char*> {
 protected:
  // Loads <TYPE>.json; sets `skip` when the test data is absent.
  json load(bool& skip) {
    const std::string rel = std::string(kDir) + "/" + GetParam() + ".json";
    skip = !test::shared_exists(rel);
    if (skip) return {};
    path_ = test::shared_path(rel);
    return json::parse(test::read_file(path_));
  }
  std::string path_;
};

TensorType type_of(const json& g) {
  const auto t = type_from_name(g.at("type").get<std::string>());
  EXPECT_TRUE(t.has_value());
  EXPECT_EQ(static_cast<uint32_t>(*t), g.at("ggml_type_id").get<uint32_t>());
  return *t;
}

TEST_P(DequantGolden, FirstBlocksBitExact) {
  bool skip = false;
  const json g = load(skip);
  if (skip) GTEST_SKIP() << "SKIP: test data not found under " << test::shared_path(kDir);
  const TensorType t = type_of(g);
  ASSERT_TRUE(can_dequantize(t));
  EXPECT_EQ(traits(t).block_elems, g.at("block_size_elements").get<uint32_t>());
  EXPECT_EQ(traits(t).block_bytes, g.at("block_size_bytes").get<uint32_t>());

  const std::vector<uint8_t> raw = test::from_hex(g.at("raw_hex").get<std::string>());
  const std::vector<uint8_t> want = test::from_hex(g.at("values_f32_hex").get<std::string>());
  const int64_t n = static_cast<int64_t>(want.size() / 4);
  ASSERT_EQ(row_bytes(t, n), raw.size()) << "raw_hex length does not match the element count";
  ASSERT_EQ(g.at("values").size(), static_cast<size_t>(n));

  std::vector<float> got(static_cast<size_t>(n));
  dequantize_row(t, raw.data(), got.data(), n);
  int mismatches = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t w;
    std::memcpy(&w, want.data() + 4 * i, 4);
    if (test::bits_of(got[static_cast<size_t>(i)]) != w && ++mismatches <= 10)
      ADD_FAILURE() << GetParam() << " element " << i << ": got " << got[static_cast<size_t>(i)]
                    << " (0x" << std::hex << test::bits_of(got[static_cast<size_t>(i)])
                    << "), want " << test::float_of(w) << " (0x" << w << ")";
  }
  EXPECT_EQ(mismatches, 0) << "of " << n << " elements";
}

TEST_P(DequantGolden, WholeTensorFromModelFile) {
  bool skip = false;
  const json g = load(skip);
  if (skip) GTEST_SKIP() << "SKIP: test data not found under " << test::shared_path(kDir);
  const TensorType t = type_of(g);
  const json& src = g.at("source");
  const std::filesystem::path model =
      std::filesystem::path(path_).parent_path() / src.at("model").get<std::string>();
  if (!std::filesystem::exists(model)) GTEST_SKIP() << "SKIP: model not found: " << model;

  const auto offset = src.at("tensor_data_offset_in_file").get<long>();
  const auto nbytes = src.at("tensor_nbytes").get<size_t>();
  const json& whole = g.at("whole_tensor");
  const auto n = whole.at("n_elements").get<int64_t>();
  ASSERT_EQ(row_bytes(t, n), nbytes);

  std::vector<uint8_t> raw(nbytes);
  FILE* f = std::fopen(model.c_str(), "rb");
  ASSERT_NE(f, nullptr) << model;
  ASSERT_EQ(std::fseek(f, offset, SEEK_SET), 0);
  const size_t got_bytes = std::fread(raw.data(), 1, nbytes, f);
  std::fclose(f);
  ASSERT_EQ(got_bytes, nbytes);
  EXPECT_EQ(sha256_hex({reinterpret_cast<const char*>(raw.data()), raw.size()}),
            whole.at("raw_sha256").get<std::string>())
      << "tensor bytes read from the wrong place";

  std::vector<float> values(static_cast<size_t>(n));
  dequantize_row(t, raw.data(), values.data(), n);
  double sum = 0, sum_abs = 0;
  for (float v : values) {
    sum += v;
    sum_abs += std::fabs(static_cast<double>(v));
  }
  const double want_sum = whole.at("sum_f64").get<double>();
  const double want_abs = whole.at("sum_abs_f64").get<double>();
  EXPECT_NEAR(sum, want_sum, 1e-9 * std::fabs(want_abs));  // sum may be near 0: scale by sum_abs
  EXPECT_NEAR(sum_abs, want_abs, 1e-9 * want_abs);
  EXPECT_EQ(sha256_hex({reinterpret_cast<const char*>(values.data()), values.size() * 4}),
            whole.at("f32_le_sha256").get<std::string>())
      << "whole dequantized tensor is not bit-exact";

  // dot_row over each 256-wide row agrees with dequantize + the same float accumulation.
  std::vector<float> x(256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  const int64_t cols = src.at("ne")[0].get<int64_t>();
  ASSERT_EQ(cols, 256);
  for (int64_t r = 0; r < n / cols; r += 17) {
    float ref = 0;
    for (int64_t c = 0; c < cols; ++c)
      ref += values[static_cast<size_t>(r * cols + c)] * x[static_cast<size_t>(c)];
    const float got =
        dot_row(t, raw.data() + row_bytes(t, cols) * static_cast<size_t>(r), x.data(), cols);
    EXPECT_NEAR(got, ref, 1e-5f * (1 + std::fabs(ref))) << "row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, DequantGolden,
                         ::testing::Values("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0",
                                           "Q5_1", "Q4_K", "Q5_K", "Q6_K"),
                         [](const auto& info) { return std::string(info.param); });

// Every golden file in the folder is covered by the list above.
TEST(DequantGoldenFolder, EveryFileIsTested) {
  HEARTH_SHARED_OR_SKIP(dir, "golden/synthetic/dequant");
  int count = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".json") continue;
    ++count;
    const auto t = type_from_name(e.path().stem().string());
    ASSERT_TRUE(t.has_value()) << e.path();
    EXPECT_TRUE(can_dequantize(*t)) << e.path();
  }
  EXPECT_EQ(count, 11);
}

}  // namespace
}  // namespace hearth
