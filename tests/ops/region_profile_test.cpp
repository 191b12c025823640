#include "ops/region_profile.h"

#include <gtest/gtest.h>

#include <vector>

#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/thread_pool.h"
#include "quant/types.h"

namespace hearth::ops {
namespace {

// A zero-filled Q8_0 matrix (all-zero blocks are valid: scale 0) of rows x cols.
struct Q8Matrix {
  std::vector<uint8_t> bytes;
  MatrixView w;
  Q8Matrix(int64_t rows, int64_t cols) {
    bytes.assign(row_bytes(TensorType::Q8_0, cols) * static_cast<size_t>(rows), 0);
    w.type = TensorType::Q8_0;
    w.data = bytes.data();
    w.n_cols = cols;
    w.n_rows = rows;
    w.row_stride = row_bytes(TensorType::Q8_0, cols);
  }
};

// Leaves profiling off and the totals empty for the next test, whatever this one does.
struct ProfileGuard {
  ProfileGuard() { reset_region_profile(); }
  ~ProfileGuard() {
    set_region_profiling(false);
    reset_region_profile();
  }
};

TEST(RegionProfile, OffRecordsNothing) {
  ProfileGuard guard;
  ThreadPool pool(2);
  Q8Matrix m(128, 64);
  std::vector<float> x(64, 1.0f), y(128);
  matmul(m.w, x.data(), 1, y.data(), pool);
  EXPECT_TRUE(region_profile().empty());
}

TEST(RegionProfile, MatmulRegionsAddUpByTheirWeightBytes) {
  ProfileGuard guard;
  ThreadPool pool(2);
  Q8Matrix a(128, 64), b(64, 64);
  std::vector<float> x(64, 1.0f), ya(128), yb(64);
  set_region_profiling(true);
  matmul(a.w, x.data(), 1, ya.data(), pool);
  matmul(a.w, x.data(), 1, ya.data(), pool);
  QuantizedActivations qx;
  quantize_activations(activation_type(TensorType::Q8_0), x.data(), 1, 64, qx);
  const MatmulOut outs[2] = {{&a.w, ya.data()}, {&b.w, yb.data()}};
  matmul_group(outs, qx, pool);  // one region over both matrices
  set_region_profiling(false);
  matmul(b.w, x.data(), 1, yb.data(), pool);  // not recorded

  const std::vector<RegionStat> p = region_profile();
  const size_t row = row_bytes(TensorType::Q8_0, 64);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].kind, RegionKind::Matmul);
  EXPECT_EQ(p[0].bytes, 128 * row);
  EXPECT_EQ(p[0].calls, 2);
  EXPECT_EQ(p[1].bytes, 192 * row);
  EXPECT_EQ(p[1].calls, 1);
  for (const RegionStat& s : p) EXPECT_GT(s.seconds, 0.0);

  reset_region_profile();
  EXPECT_TRUE(region_profile().empty());
}

TEST(RegionProfile, AttentionRegionsAreTheirOwnKind) {
  ProfileGuard guard;
  ThreadPool pool(2);
  KvLayout lay;
  lay.type = TensorType::F16;
  lay.n_kv_head = 2;
  lay.head_dim = 32;
  lay.block_tokens = 4;
  std::vector<uint8_t> k(lay.block_bytes(), 0), v(lay.block_bytes(), 0);
  const uint8_t* kp[1] = {k.data()};
  const uint8_t* vp[1] = {v.data()};
  const KvSeqView view{lay, kp, vp, 3};
  std::vector<float> q(4 * 32, 0.5f), out(4 * 32);
  AttentionArgs a{q.data(), 1, 4, 2, 1.0f, out.data()};
  set_region_profiling(true);
  for (int i = 0; i < 3; ++i) attention_batch({&a, 1}, {&view, 1}, pool);
  set_region_profiling(false);

  const std::vector<RegionStat> p = region_profile();
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].kind, RegionKind::Attention);
  EXPECT_EQ(p[0].bytes, 0u);
  EXPECT_EQ(p[0].calls, 3);
}

}  // namespace
}  // namespace hearth::ops
