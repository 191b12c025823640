// The fused attention task of ops/avx2/attention_tasks.h compiled with AVX-512: the prefill
// GEMMs (scores: 16 keys per vector; P*V: 16 columns per vector) and the decode kernels (scores:
// two keys' chains per vector; P*V: 16 columns per vector) on 512-bit vectors, the same
// operations on every lane, so the same bits as the AVX2 build.
// GCC 12's AVX-512 intrinsics pass _mm*_undefined_*() values to their builtins, which
// -Wmaybe-uninitialized reports (a false positive; nothing reads those lanes).
#if defined(__GNUC__) && !defined(__clang__)  // GCC only; clang has no such group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define HEARTH_ATTN_NS avx512
#include "ops/avx2/attention_tasks.h"
