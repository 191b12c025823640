// Attention: KV encoding, the double-precision reference, and the fused kernel's driver
// (validation, task split, dispatch) plus its portable scalar implementation. The AVX2 kernel
// is in avx2/attention_avx2.cpp; both follow the reduction order in attention_kernels.h.
#include "ops/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

#include "ops/attention_kernels.h"
#include "ops/cpu_features.h"
#include "ops/elementwise.h"
#include "ops/reference.h"
#include "ops/region_profile.h"
#include "ops/share_split.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"
#include "util/error.h"

namespace hearth::ops {

bool kv_type_supported(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::Q8_0 ||
         t == TensorType::Q4_0;
}

size_t KvLayout::head_bytes() const {
  return row_bytes(type, head_dim);
}

namespace {

// One row of n elements in the KV type: F16 through the SIMD conversion (bit-identical to the
// reference quantizer's), the block types through the reference quantizer.
void encode_row(TensorType type, const float* src, uint8_t* dst, int64_t n) {
  if (type == TensorType::F16) {
    to_f16(src, reinterpret_cast<uint16_t*>(dst), n);
    return;
  }
  quantize_row(type, src, dst, n);
}

}  // namespace

void kv_encode_token(const KvLayout& layout, const float* src, uint8_t* dst) {
  // Heads are back to back and head_dim is a multiple of the block size, so one row of
  // n_kv_head * head_dim elements encodes every head.
  encode_row(layout.type, src, dst, layout.n_kv_head * layout.head_dim);
}

void kv_store_token(const KvLayout& layout, const float* src, uint8_t* block, int64_t slot) {
  if (!layout.head_major) {
    kv_encode_token(layout, src, block + kv_row_offset(layout, slot, 0));
    return;
  }
  for (int64_t h = 0; h < layout.n_kv_head; ++h)
    encode_row(layout.type, src + h * layout.head_dim, block + kv_row_offset(layout, slot, h),
               layout.head_dim);
}

namespace {

void validate(const AttentionArgs& a, const KvSeqView& kv) {
  const KvLayout& L = kv.layout;
  if (!kv_type_supported(L.type)) fail("attention: unsupported KV type {}", type_name(L.type));
  if (L.head_dim <= 0 || L.n_kv_head <= 0 || L.block_tokens <= 0)
    fail("attention: bad KV layout (head_dim {}, n_kv_head {}, block_tokens {})", L.head_dim,
         L.n_kv_head, L.block_tokens);
  if (L.head_dim % traits(L.type).block_elems != 0)
    fail("attention: {} KV needs head_dim a multiple of {} (got {})", type_name(L.type),
         traits(L.type).block_elems, L.head_dim);
  if (a.n_head <= 0 || a.n_head % L.n_kv_head != 0)
    fail("attention: {} query heads do not group over {} KV heads", a.n_head, L.n_kv_head);
  if (a.window < 0) fail("attention: negative window {}", a.window);
  if (a.window > 0 && L.head_bytes() > detail::kZeroRowBytes)
    fail("attention: a windowed head of {} bytes exceeds the zero row", L.head_bytes());
  if (a.n_q < 0 || a.pos0 < 0 || a.pos0 + a.n_q > kv.n_tokens)
    fail("attention: query positions [{}, {}) beyond the {} cached tokens", a.pos0, a.pos0 + a.n_q,
         kv.n_tokens);
}

// Scratch that lives as long as its (pool) thread: grows, never shrinks.
float* thread_scratch(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

}  // namespace

void attention_reference(const AttentionArgs& a, const KvSeqView& kv) {
  validate(a, kv);
  const KvLayout& L = kv.layout;
  const int64_t hd = L.head_dim, group = a.n_head / L.n_kv_head;
  auto row = [&](const uint8_t* const* blocks, int64_t pos, int64_t head) {
    return blocks[pos / L.block_tokens] + kv_row_offset(L, pos % L.block_tokens, head);
  };
  std::vector<float> kbuf(static_cast<size_t>(hd)), vbuf(static_cast<size_t>(hd));
  std::vector<double> w, acc(static_cast<size_t>(hd));
  for (int64_t t = 0; t < a.n_q; ++t) {
    const int64_t p = a.pos0 + t;
    w.assign(static_cast<size_t>(p + 1), 0.0);
    for (int64_t h = 0; h < a.n_head; ++h) {
      const float* q = a.q + (t * a.n_head + h) * hd;
      const int64_t kvh = h / group;
      double mx = -std::numeric_limits<double>::infinity();
      const int64_t lo = a.window > 0 ? std::max<int64_t>(0, p - a.window + 1) : 0;
      for (int64_t j = 0; j < lo; ++j) w[j] = -std::numeric_limits<double>::infinity();
      for (int64_t j = lo; j <= p; ++j) {
        dequantize_row(L.type, row(kv.k_blocks, j, kvh), kbuf.data(), hd);
        double s = 0.0;
        for (int64_t i = 0; i < hd; ++i) s += static_cast<double>(q[i]) * kbuf[i];
        w[j] = s * a.scale;
        mx = std::max(mx, w[j]);
      }
      double sum = 0.0;
      for (int64_t j = 0; j <= p; ++j) {
        w[j] = std::exp(w[j] - mx);
        sum += w[j];
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = lo; j <= p; ++j) {  // never a row before the window (null blocks)
        dequantize_row(L.type, row(kv.v_blocks, j, kvh), vbuf.data(), hd);
        for (int64_t i = 0; i < hd; ++i) acc[i] += w[j] * vbuf[i];
      }
      float* out = a.out + (t * a.n_head + h) * hd;
      for (int64_t i = 0; i < hd; ++i) out[i] = static_cast<float>(acc[i] / sum);
    }
  }
}

namespace detail {

// The portable version of the fused kernel: same tiles and online softmax as the AVX2 one,
// plain float code (std::exp, ref::dot).
void attention_task_scalar(const AttnTask& t) {
  const KvSeqView& kv = *t.kv;
  const TensorType type = kv.layout.type;
  const int64_t hd = t.head_dim, T = kAttnTile, M = t.n_rows * t.group;
  const auto uhd = static_cast<size_t>(hd), uT = static_cast<size_t>(T);
  const auto uM = static_cast<size_t>(M);
  float* kt = thread_scratch(2 * uT * uhd + uM * uT + SoftmaxState::floats(uM, uhd));
  float* vt = kt + uT * uhd;
  float* s = vt + uT * uhd;  // [M][T]
  const SoftmaxState st(s + uM * uT, uM, uhd);
  float *o = st.o, *mx = st.mx, *l = st.l, *alpha = st.alpha;
  const float kNegInf = -std::numeric_limits<float>::infinity();

  const int64_t p_last = t.pos_first + t.n_rows - 1;
  for (int64_t j0 = t.first_tile(); j0 <= p_last; j0 += T) {
    const int64_t jn = t.tile_len(j0);
    for (int64_t j = 0; j < jn; ++j)
      dequantize_row(type, kv_row(t, kv.k_blocks, j0 + j), kt + j * hd, hd);
    const int64_t r_begin = std::max<int64_t>(0, j0 - t.pos_first);
    const int64_t m_end = t.end_row(j0) * t.group;  // later rows' windows start after the tile
    for (int64_t m = r_begin * t.group; m < m_end; ++m) {
      const int64_t r = m / t.group;
      const float* q = t.q + r * t.row_stride + (m % t.group) * hd;
      const int64_t valid = std::min(jn, t.pos_first + r - j0 + 1);
      const int64_t first = t.first_pos(r) - j0;  // lanes before the window are masked
      float* sm = s + m * T;
      float tmax = kNegInf;
      for (int64_t j = 0; j < T; ++j) {
        sm[j] = j < valid && j >= first ? ref::dot(q, kt + j * hd, hd) * t.scale : kNegInf;
        tmax = std::max(tmax, sm[j]);
      }
      const float m_new = std::max(mx[m], tmax);
      alpha[m] = mx[m] == kNegInf ? 0.0f : std::exp(mx[m] - m_new);
      float lsum = 0.0f;
      for (int64_t j = 0; j < T; ++j) {
        sm[j] = std::exp(sm[j] - m_new);
        lsum += sm[j];
      }
      l[m] = l[m] * alpha[m] + lsum;
      mx[m] = m_new;
    }
    for (int64_t j = 0; j < jn; ++j)
      dequantize_row(type, kv_row(t, kv.v_blocks, j0 + j), vt + j * hd, hd);
    for (int64_t m = r_begin * t.group; m < m_end; ++m) {
      const int64_t valid = std::min(jn, t.pos_first + m / t.group - j0 + 1);
      float* om = o + m * hd;
      const float* sm = s + m * T;
      for (int64_t i = 0; i < hd; ++i) om[i] *= alpha[m];
      for (int64_t j = 0; j < valid; ++j) {
        const float* v = vt + j * hd;
        for (int64_t i = 0; i < hd; ++i) om[i] += sm[j] * v[i];
      }
    }
  }
  for (int64_t m = 0; m < M; ++m) {
    const float inv = 1.0f / l[m];
    float* out = t.out + (m / t.group) * t.row_stride + (m % t.group) * hd;
    for (int64_t i = 0; i < hd; ++i) out[i] = o[m * hd + i] * inv;
  }
}

}  // namespace detail

namespace {

// One sequence's tasks, (KV head) x (chunk of query rows), appended KV head by KV head, so that
// consecutive tasks on a core reread the same head's K/V from its cache; within a head, later
// query rows (more positions) go first.
void append_tasks(const AttentionArgs& a, const KvSeqView& kv, std::vector<detail::AttnTask>& out) {
  validate(a, kv);
  if (a.n_q == 0) return;
  const KvLayout& L = kv.layout;
  const int64_t hd = L.head_dim, group = a.n_head / L.n_kv_head;
  const int64_t R = detail::kAttnQueryRows;
  const int64_t n_chunks = (a.n_q + R - 1) / R;
  detail::AttnTask base;
  base.kv = &kv;
  base.head_bytes = L.head_bytes();
  base.token_bytes = L.token_bytes();
  base.head_major = L.head_major;
  base.head_dim = hd;
  base.group = group;
  base.row_stride = a.n_head * hd;
  base.scale = a.scale;
  base.window = a.window;
  for (int64_t task = 0; task < n_chunks * L.n_kv_head; ++task) {
    const int64_t chunk = n_chunks - 1 - task % n_chunks;
    detail::AttnTask t = base;
    t.kv_head = task / n_chunks;
    t.n_rows = std::min(R, a.n_q - chunk * R);
    t.pos_first = a.pos0 + chunk * R;
    const int64_t off = chunk * R * t.row_stride + t.kv_head * group * hd;
    t.q = a.q + off;
    t.out = a.out + off;
    out.push_back(t);
  }
}

}  // namespace

namespace {

// The AVX-512 build of the task, where the matmuls use theirs (ops/cpu_features.h: vnni_evex).
bool attention_uses_avx512() {
  return simd_level() >= SimdLevel::Avx2Vnni && vnni_evex();
}

std::atomic<int> g_key_pairs{-1};  // attention_key_pairs(); -1: not decided yet

}  // namespace

bool attention_key_pairs() {
  int k = g_key_pairs.load(std::memory_order_relaxed);
  if (k < 0) {
    k = cpu_features().avxvnni ? 1 : 0;
    g_key_pairs.store(k, std::memory_order_relaxed);
  }
  return k == 1;
}

void set_attention_key_pairs(bool pairs) {
  g_key_pairs.store(pairs ? 1 : 0, std::memory_order_relaxed);
}

const char* attention_kernel_name() {  // the branch attention() takes per task
  if (use_avx2()) return attention_uses_avx512() ? "avx512" : "avx2";
  return "scalar";
}

void attention(const AttentionArgs& a, const KvSeqView& kv, ThreadPool& pool) {
  attention_batch({&a, 1}, {&kv, 1}, pool);
}

void attention_batch(std::span<const AttentionArgs> a, std::span<const KvSeqView> kv,
                     ThreadPool& pool) {
  if (a.size() != kv.size())
    fail("attention_batch: {} queries for {} K/V views", a.size(), kv.size());
  const RegionTimer timer(RegionKind::Attention, 0);
  // Reused task list (no allocation per layer once warm). The largest sequences' tasks go first
  // so that the small ones fill in at the end.
  thread_local std::vector<detail::AttnTask> tasks;
  thread_local std::vector<size_t> order;
  tasks.clear();
  order.resize(a.size());
  for (size_t i = 0; i < a.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return a[x].n_q * kv[x].n_tokens > a[y].n_q * kv[y].n_tokens;
  });
  for (size_t i : order) append_tasks(a[i], kv[i], tasks);
  bool simd = false, zmm = false;
#if defined(__x86_64__)
  simd = simd_level() >= SimdLevel::Avx2;
  zmm = attention_uses_avx512();
#endif
  const bool pairs = zmm && attention_key_pairs();
  for (detail::AttnTask& t : tasks) t.key_pairs = pairs;
  // Decode (every task on the direct path): contiguous runs of tasks per thread
  // (parallel_shares), so the task after this one in the list is the one this thread most likely
  // runs next, and its first tile is prefetched during this one's last (AttnTask::next) instead
  // of each task starting on a cold stream. Qwen3-0.6B Q4_0 decode, 2 threads, Zen 4, tokens
  // alternated between the two ways in one run: depth 256-2,048 0.99-1.11x tok/s, median 1.03x.
  bool direct = true;
  for (const detail::AttnTask& t : tasks) direct = direct && detail::direct_task(t);
  if (direct)
    for (size_t i = 0; i + 1 < tasks.size(); ++i) tasks[i].next = &tasks[i + 1];
  const std::vector<detail::AttnTask>& list = tasks;  // the workers see their own thread_locals
  auto run = [&](int64_t i, int) {
    const detail::AttnTask& t = list[static_cast<size_t>(i)];
    if (zmm && t.head_dim % 8 == 0) {
      detail::avx512::attention_task(t);
    } else if (simd && t.head_dim % 8 == 0) {
      detail::avx2::attention_task(t);
    } else {
      detail::attention_task_scalar(t);
    }
  };
  if (direct)
    parallel_shares(pool, static_cast<int64_t>(list.size()), run);
  else
    pool.parallel_for(static_cast<int64_t>(list.size()), run);
}

}  // namespace hearth::ops

#if !defined(__x86_64__)
// No SIMD tasks on this architecture: use_avx2() is always false, these are never called.
namespace hearth::ops::detail {
void avx2::attention_task(const AttnTask& t) {
  attention_task_scalar(t);
}
void avx512::attention_task(const AttnTask& t) {
  attention_task_scalar(t);
}
}  // namespace hearth::ops::detail
#endif
