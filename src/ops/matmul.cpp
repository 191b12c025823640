// matmul: activation quantization, dispatch on simd_level() and weight type, and the split of
// output rows over the thread pool. Every output element is computed by exactly one call of a
// row kernel whose arithmetic for (t, r) depends only on weight row r and activation row t.
#include "ops/matmul.h"

#include <algorithm>
#include <array>

#include "ops/cpu_features.h"
#include "ops/matmul_kernels.h"
#include "ops/region_profile.h"
#include "ops/share_split.h"
#include "util/error.h"

namespace hearth::ops {
namespace mm {

ActLayout act_layout(TensorType act_type, int64_t n_cols) {
  const auto n = static_cast<size_t>(n_cols);
  ActLayout l;
  switch (act_type) {
    case TensorType::F32:
      l.d_off = l.sum_off = 4 * n;
      l.stride = 4 * n;
      break;
    case TensorType::Q8_0:
      l.d_off = n;
      l.sum_off = l.d_off + 4 * (n / 32);
      l.stride = l.sum_off + 2 * (n / 32);
      break;
    case TensorType::Q8_K:
      l.d_off = n;
      l.sum_off = l.d_off + 4 * (n / 256);
      l.stride = l.sum_off + 2 * (n / 16);
      break;
    default:
      fail("matmul: {} is not an activation type", type_name(act_type));
  }
  l.stride = (l.stride + 63) / 64 * 64;
  return l;
}

}  // namespace mm

namespace {

int64_t block_elems(TensorType t) {
  return traits(t).block_elems;
}

void check_act_type(TensorType act, int64_t n_cols) {
  if (act != TensorType::F32 && act != TensorType::Q8_0 && act != TensorType::Q8_K)
    fail("quantize_activations: {} is not an activation type", type_name(act));
  if (n_cols < 0 || n_cols % block_elems(act) != 0)
    fail("quantize_activations: width {} is not a multiple of the {} block size", n_cols,
         type_name(act));
}

void prepare_into(TensorType act, int64_t n_tok, int64_t n_cols, QuantizedActivations& out) {
  check_act_type(act, n_cols);
  if (n_tok < 0) fail("quantize_activations: negative token count");
  out.type = act;
  out.n_tok = n_tok;
  out.n_cols = n_cols;
  out.row_stride = mm::act_layout(act, n_cols).stride;
  out.data.resize(out.row_stride * static_cast<size_t>(n_tok));
}

void rows_into(const float* x, int64_t t0, int64_t t1, QuantizedActivations& out, bool simd) {
  if (t0 < 0 || t1 > out.n_tok || t0 > t1)
    fail("quantize_activation_rows: rows [{}, {}) of {}", t0, t1, out.n_tok);
  const mm::ActLayout lay = mm::act_layout(out.type, out.n_cols);
  uint8_t* dst = out.data.data() + static_cast<size_t>(t0) * lay.stride;
  if (simd)
    mm::quantize_rows_avx2(out.type, x + t0 * out.n_cols, t1 - t0, out.n_cols, dst, lay);
  else
    mm::quantize_rows_scalar(out.type, x + t0 * out.n_cols, t1 - t0, out.n_cols, dst, lay);
}

void quantize_into(TensorType act, const float* x, int64_t n_tok, int64_t n_cols,
                   QuantizedActivations& out, bool simd, ThreadPool* pool) {
  prepare_into(act, n_tok, n_cols, out);
  const int64_t per_task = 8;
  if (pool == nullptr || pool->size() == 1 || n_tok < 2 * per_task) {
    if (n_tok > 0) rows_into(x, 0, n_tok, out, simd);
    return;
  }
  const int64_t n_tasks = (n_tok + per_task - 1) / per_task;
  pool->parallel_for(n_tasks, [&](int64_t task, int) {
    rows_into(x, task * per_task, std::min(n_tok, (task + 1) * per_task), out, simd);
  });
}

mm::Acts view(const QuantizedActivations& x) {
  mm::Acts a;
  a.type = x.type;
  a.data = x.data.data();
  a.n_tok = x.n_tok;
  a.n_cols = x.n_cols;
  a.lay = mm::act_layout(x.type, x.n_cols);
  if (a.lay.stride != x.row_stride || x.data.size() < x.row_stride * static_cast<size_t>(x.n_tok))
    fail("matmul: activations have an unexpected layout");
  return a;
}

void check(const MatrixView& w, const mm::Acts& x) {
  if (!matmul_supported(w.type))
    fail("matmul: weight type {} is not supported ({})", type_name(w.type), w.name);
  if (x.type != activation_type(w.type))
    fail("matmul: {} activations given for {} weights ({})", type_name(x.type), type_name(w.type),
         w.name);
  if (x.n_cols != w.n_cols)
    fail("matmul: activation width {} != weight width {} ({})", x.n_cols, w.n_cols, w.name);
  if (w.n_cols % block_elems(w.type) != 0)
    fail("matmul: width {} is not a multiple of the {} block size ({})", w.n_cols,
         type_name(w.type), w.name);
}

void rows_dispatch(bool simd, const MatrixView& w, const mm::Acts& x, float* y, int64_t r0,
                   int64_t r1) {
  if (simd && simd_level() >= SimdLevel::Avx2Vnni &&
      (vnni_evex() ? mm::rows_avx512vnni(w, x, y, w.n_rows, r0, r1)
                   : mm::rows_avxvnni(w, x, y, w.n_rows, r0, r1)))
    return;
  if (simd && mm::rows_avx2(w, x, y, w.n_rows, r0, r1)) return;
  mm::rows_scalar(w, x, y, w.n_rows, r0, r1);
}

// Row chunks of one product: a few per thread for dynamic balance, a multiple of 16 rows (whole
// tiles and whole cache lines of y), and not so small that scheduling costs more than the work.
int64_t row_chunk(const MatrixView& w, const mm::Acts& x, int n_threads) {
  constexpr int64_t kAlign = 16;
  const int64_t work_per_row = std::max<int64_t>(1, x.n_tok * w.n_cols);
  const int64_t min_rows = std::max<int64_t>(kAlign, (int64_t{1} << 17) / work_per_row);
  int64_t chunk = (w.n_rows + 4 * n_threads - 1) / (4 * n_threads);
  chunk = std::max(chunk, min_rows);
  return (chunk + kAlign - 1) / kAlign * kAlign;
}

// Decode's products (a few tokens) stream their weights once from memory. Split as contiguous
// shares, one per thread (ops/share_split.h), they are one long stream per thread instead of a
// new one at every chunk: Zen 4, 2 threads, Qwen3-0.6B Q4_0 tg128 118 -> 137 tok/s while both
// threads had their own core's bandwidth. Slices of kShareSliceRows rows keep the stealing fine.
constexpr int64_t kShareMaxTokens = 4;
constexpr int64_t kShareSliceRows = 64;

struct GroupJob {
  const MatrixView* w;
  float* y;
  bool simd;
  int64_t chunk, first_task;
};

// Rows [s * kShareSliceRows, ...) of the products laid end to end; a slice may span two.
void run_share_slice(std::span<const GroupJob> jobs, const mm::Acts& x, int64_t slice) {
  const int64_t u0 = slice * kShareSliceRows, u1 = u0 + kShareSliceRows;
  int64_t base = 0;
  for (const GroupJob& jb : jobs) {
    const int64_t n = jb.w->n_rows;
    const int64_t r0 = std::max<int64_t>(u0 - base, 0), r1 = std::min<int64_t>(u1 - base, n);
    if (r0 < r1) rows_dispatch(jb.simd, *jb.w, x, jb.y, r0, r1);
    base += n;
    if (base >= u1) return;
  }
}

// Bytes of weights the products read, as stored in the file (what `hearth bench` counts per
// token; a packed copy holds the same, Q4_K's 3% more).
size_t weight_bytes(std::span<const GroupJob> jobs) {
  size_t bytes = 0;
  for (const GroupJob& jb : jobs) bytes += jb.w->bytes();
  return bytes;
}

// Several products over the same activations in one parallel region: their row chunks are one
// task list, so a step pays one hand-off and one tail instead of one per matrix.
void run_group(std::span<const MatmulOut> outs, const mm::Acts& x, ThreadPool& pool) {
  std::array<GroupJob, 8> jobs;
  if (outs.size() > jobs.size()) fail("matmul_group: at most {} products", jobs.size());
  size_t n_jobs = 0;
  int64_t n_tasks = 0, n_rows = 0;
  bool aligned = true;  // every product but the last whole slices, so a slice cuts no 8-row group
  for (const MatmulOut& o : outs) {
    check(*o.w, x);
    if (o.w->n_rows == 0 || x.n_tok == 0) continue;
    const bool simd = simd_level() >= SimdLevel::Avx2 && mm::avx2_has_kernel(o.w->type);
    const int64_t chunk = row_chunk(*o.w, x, pool.size());
    aligned = aligned && n_rows % kShareSliceRows == 0;
    jobs[n_jobs++] = {o.w, o.y, simd, chunk, n_tasks};
    n_tasks += (o.w->n_rows + chunk - 1) / chunk;
    n_rows += o.w->n_rows;
  }
  const std::span<const GroupJob> js(jobs.data(), n_jobs);
  if (js.empty()) return;
  const RegionTimer timer(RegionKind::Matmul, region_profiling() ? weight_bytes(js) : 0);
  if (pool.size() == 1 || n_tasks == 1) {  // one call per product: whole token blocks
    for (const GroupJob& jb : js) rows_dispatch(jb.simd, *jb.w, x, jb.y, 0, jb.w->n_rows);
    return;
  }
  if (x.n_tok <= kShareMaxTokens && aligned) {
    parallel_shares(pool, (n_rows + kShareSliceRows - 1) / kShareSliceRows,
                    [&](int64_t slice, int) { run_share_slice(js, x, slice); });
    return;
  }
  pool.parallel_for(n_tasks, [&](int64_t task, int) {
    size_t j = 0;
    while (j + 1 < n_jobs && jobs[j + 1].first_task <= task) ++j;
    const GroupJob& jb = jobs[j];
    const int64_t r0 = (task - jb.first_task) * jb.chunk;
    rows_dispatch(jb.simd, *jb.w, x, jb.y, r0, std::min(jb.w->n_rows, r0 + jb.chunk));
  });
}

void run(const MatrixView& w, const mm::Acts& x, float* y, ThreadPool& pool) {
  const MatmulOut o{&w, y};
  run_group({&o, 1}, x, pool);
}

}  // namespace

const char* matmul_kernel_name(const MatrixView& w) {
  mm::Acts none;  // no tokens, no rows: the kernels only say whether they take the matrix
  none.type = activation_type(w.type);
  none.n_cols = w.n_cols;
  none.lay = mm::act_layout(none.type, none.n_cols);
  if (simd_level() >= SimdLevel::Avx2Vnni) {
    if (vnni_evex() ? mm::rows_avx512vnni(w, none, nullptr, 0, 0, 0)
                    : mm::rows_avxvnni(w, none, nullptr, 0, 0, 0))
      return vnni_evex() ? "avx512-vnni" : "avx-vnni";
  }
  if (simd_level() >= SimdLevel::Avx2 && mm::rows_avx2(w, none, nullptr, 0, 0, 0)) return "avx2";
  return "scalar";
}

TensorType activation_type(TensorType w) {
  switch (w) {
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
      return TensorType::Q8_0;
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
      return TensorType::Q8_K;
    default:
      return TensorType::F32;
  }
}

bool matmul_supported(TensorType w) {
  switch (w) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
    case TensorType::Q8_0:
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

bool matmul_has_simd_kernel(TensorType w) {
  return simd_level() >= SimdLevel::Avx2 && mm::avx2_has_kernel(w);
}

void quantize_activations(TensorType act_type, const float* x, int64_t n_tok, int64_t n_cols,
                          QuantizedActivations& out) {
  quantize_into(act_type, x, n_tok, n_cols, out, simd_level() >= SimdLevel::Avx2, nullptr);
}

void quantize_activations_scalar(TensorType act_type, const float* x, int64_t n_tok, int64_t n_cols,
                                 QuantizedActivations& out) {
  quantize_into(act_type, x, n_tok, n_cols, out, false, nullptr);
}

void prepare_activations(TensorType act_type, int64_t n_tok, int64_t n_cols,
                         QuantizedActivations& out) {
  prepare_into(act_type, n_tok, n_cols, out);
}

void quantize_activation_rows(const float* x, int64_t t0, int64_t t1, QuantizedActivations& out) {
  rows_into(x, t0, t1, out, simd_level() >= SimdLevel::Avx2);
}

size_t activation_row_stride(TensorType act_type, int64_t n_cols) {
  check_act_type(act_type, n_cols);
  return mm::act_layout(act_type, n_cols).stride;
}

const int8_t* activation_qs(const QuantizedActivations& x, int64_t t) {
  return reinterpret_cast<const int8_t*>(x.data.data() + static_cast<size_t>(t) * x.row_stride);
}

const float* activation_scales(const QuantizedActivations& x, int64_t t) {
  return reinterpret_cast<const float*>(x.data.data() + static_cast<size_t>(t) * x.row_stride +
                                        mm::act_layout(x.type, x.n_cols).d_off);
}

const int16_t* activation_sums(const QuantizedActivations& x, int64_t t) {
  return reinterpret_cast<const int16_t*>(x.data.data() + static_cast<size_t>(t) * x.row_stride +
                                          mm::act_layout(x.type, x.n_cols).sum_off);
}

const float* activation_f32(const QuantizedActivations& x, int64_t t) {
  return reinterpret_cast<const float*>(x.data.data() + static_cast<size_t>(t) * x.row_stride);
}

void matmul(const MatrixView& w, const QuantizedActivations& x, float* y, ThreadPool& pool) {
  run(w, view(x), y, pool);
}

void matmul_group(std::span<const MatmulOut> outs, const QuantizedActivations& x,
                  ThreadPool& pool) {
  run_group(outs, view(x), pool);
}

void matmul(const MatrixView& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool) {
  const TensorType act = activation_type(w.type);
  if (act == TensorType::F32) {
    mm::Acts a;
    a.type = act;
    a.data = reinterpret_cast<const uint8_t*>(x);
    a.n_tok = n_tok;
    a.n_cols = w.n_cols;
    a.lay.d_off = a.lay.sum_off = a.lay.stride = static_cast<size_t>(w.n_cols) * 4;
    run(w, a, y, pool);
    return;
  }
  if (!matmul_supported(w.type)) fail("matmul: weight type {} is not supported", type_name(w.type));
  thread_local QuantizedActivations buf;  // reused: no allocation per call once warm
  quantize_into(act, x, n_tok, w.n_cols, buf, simd_level() >= SimdLevel::Avx2, &pool);
  run(w, view(buf), y, pool);
}

void matmul_rows(const MatrixView& w, const QuantizedActivations& x, float* y, int64_t r0,
                 int64_t r1) {
  const mm::Acts a = view(x);
  check(w, a);
  if (r0 < 0 || r1 > w.n_rows || r0 > r1) fail("matmul_rows: bad row range [{}, {})", r0, r1);
  const bool simd = simd_level() >= SimdLevel::Avx2 && mm::avx2_has_kernel(w.type);
  rows_dispatch(simd, w, a, y, r0, r1);
}

void matmul_scalar(const MatrixView& w, const QuantizedActivations& x, float* y) {
  const mm::Acts a = view(x);
  check(w, a);
  if (w.n_rows == 0 || a.n_tok == 0) return;
  mm::rows_scalar(w, a, y, w.n_rows, 0, w.n_rows);
}

}  // namespace hearth::ops

#if !(defined(__x86_64__) || defined(_M_X64))
// No AVX2 kernels on this architecture: simd_level() is always Scalar, these are never used.
namespace hearth::ops::mm {
void quantize_rows_avx2(TensorType act_type, const float* x, int64_t n_tok, int64_t n_cols,
                        uint8_t* out, const ActLayout& lay) {
  quantize_rows_scalar(act_type, x, n_tok, n_cols, out, lay);
}
bool rows_avx2(const MatrixView&, const Acts&, float*, int64_t, int64_t, int64_t) {
  return false;
}
bool avx2_has_kernel(TensorType) {
  return false;
}
bool rows_avxvnni(const MatrixView&, const Acts&, float*, int64_t, int64_t, int64_t) {
  return false;
}
bool rows_avx512vnni(const MatrixView&, const Acts&, float*, int64_t, int64_t, int64_t) {
  return false;
}
}  // namespace hearth::ops::mm
#endif
