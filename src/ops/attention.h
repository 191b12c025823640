// Fused causal attention (flash-attention style: tiled, online softmax, no materialised score
// matrix) over a sequence's K/V stored in fixed-size blocks of encoded rows. With one block it
// is a contiguous cache; with many it reads a paged pool directly.
#pragma once

#include <cstdint>
#include <span>

#include "ops/thread_pool.h"
#include "quant/types.h"

namespace hearth::ops {

// The types a KV cache may be stored in: F32, F16, Q8_0, Q4_0 (GGML's blocks of 32: an f16
// scale and 32 int8 / 4-bit values, encoded by the reference quantizer of quant/quantize.h).
bool kv_type_supported(TensorType t);

struct KvLayout {
  // F32, F16, Q8_0 or Q4_0 (kv_type_supported); head_dim a multiple of 32 for Q8_0 and Q4_0.
  TensorType type = TensorType::F16;
  int64_t n_kv_head = 0;
  int64_t head_dim = 0;
  int64_t block_tokens = 0;  // tokens per block
  // Order of a block's rows. Token-major (false): token slot s holds its n_kv_head heads back
  // to back at s * token_bytes(). Head-major (true): head h's rows for the block's tokens are
  // contiguous, slot s of head h at (h * block_tokens + s) * head_bytes() (write with
  // kv_store_token). Head-major is the faster one: attention walks one KV head at a time, and
  // token-major makes that a strided walk (head_bytes out of every token_bytes) that hardware
  // prefetchers and DRAM pages serve poorly; with the kernel's software prefetch, decode over
  // 4096 cached F16 positions measured ~35% faster head-major. Results are bit-identical.
  bool head_major = false;

  size_t head_bytes() const;  // one head of one token, encoded
  size_t token_bytes() const { return head_bytes() * static_cast<size_t>(n_kv_head); }
  size_t block_bytes() const { return token_bytes() * static_cast<size_t>(block_tokens); }
};

// One sequence's K and V for one layer: block i holds tokens [i*block_tokens, (i+1)*block_tokens)
// in the layout's row order.
struct KvSeqView {
  KvLayout layout;
  const uint8_t* const* k_blocks = nullptr;
  const uint8_t* const* v_blocks = nullptr;
  int64_t n_tokens = 0;  // valid tokens
};

// Encodes one token's K or V (n_kv_head * head_dim floats) into `dst` in layout.type, heads back
// to back (a token-major slot).
void kv_encode_token(const KvLayout& layout, const float* src, uint8_t* dst);

// Encodes one token's K or V into slot `slot` of `block`, in either row order.
void kv_store_token(const KvLayout& layout, const float* src, uint8_t* block, int64_t slot);

// Where head `head` of slot `slot` lives in a block (offset in bytes), in either row order.
inline size_t kv_row_offset(const KvLayout& layout, int64_t slot, int64_t head) {
  return layout.head_major
             ? static_cast<size_t>(head * layout.block_tokens + slot) * layout.head_bytes()
             : static_cast<size_t>(slot) * layout.token_bytes() +
                   static_cast<size_t>(head) * layout.head_bytes();
}

struct AttentionArgs {
  const float* q = nullptr;  // [n_q][n_head * head_dim], RoPE applied
  int64_t n_q = 0;
  int64_t n_head = 0;
  int64_t pos0 = 0;  // position of q row 0; row t attends to K/V positions 0..pos0+t
  float scale = 1.0f;
  float* out = nullptr;  // [n_q][n_head * head_dim]
  // Sliding window (0: none): row t attends to positions max(0, p - window + 1) .. p, p =
  // pos0 + t. Positions before the window are masked inside the same fixed tiles (tiles wholly
  // before it skipped), so the batch invariance below holds with a window too.
  int64_t window = 0;
};

// Query head h uses KV head h / (n_head / n_kv_head). Needs pos0 + n_q <= kv.n_tokens (rows
// beyond n_tokens are never read); throws hearth::Error on bad arguments.
//
// Batch invariance: for a given SIMD level, the output for (query row, head) is bit-identical
// whatever n_q, the pos0 grouping, the thread count, block_tokens or the row order: KV
// positions are reduced in tiles at fixed absolute positions, in a fixed order (see
// attention_kernels.h). The scalar and AVX2 paths differ from each other (within tolerance).
// Accuracy: within 1e-5 of each output row's largest magnitude of attention_reference, for
// every KV type (tests/ops/attention_test.cpp).
//
// Work is split into (KV head) x (chunk of query rows) tasks over the pool; a decode step (one
// query row) therefore uses at most n_kv_head threads.
void attention(const AttentionArgs& a, const KvSeqView& kv, ThreadPool& pool);

// The kernel attention() runs at the current level: "avx512", "avx2" or "scalar".
const char* attention_kernel_name();

// Decode scores in the AVX-512 build: two keys' 8-lane chains per 512-bit vector (which halves
// the FMA instructions where 512-bit FMAs run at full width) or one key per 256-bit vector
// (Zen 4 splits 512-bit operations in two, so pairing costs a lane insert per vector and saves
// nothing: F16 decode at ctx 2048 from memory read 35.5-36 GB/s paired against 38-40 unpaired).
// Paired on CPUs that also have AVX-VNNI (Zen 5, Intel since Sapphire Rapids), unpaired on the
// others (Zen 4, Ice Lake); the same bits either way. set_attention_key_pairs is for tests.
bool attention_key_pairs();
void set_attention_key_pairs(bool pairs);

// attention() for several sequences (a[i] over kv[i]) as one parallel region: a step of many
// sequences pays one hand-off per layer, not one per sequence. Same results as attention().
void attention_batch(std::span<const AttentionArgs> a, std::span<const KvSeqView> kv,
                     ThreadPool& pool);

// Plain reference (the oracle): dequantize each K/V row with quant/dequantize.h, dot products,
// full softmax and the weighted sum of V all in double, rounded to f32 at the end.
void attention_reference(const AttentionArgs& a, const KvSeqView& kv);

}  // namespace hearth::ops
