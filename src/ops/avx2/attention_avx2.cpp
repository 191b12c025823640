// The fused attention task on AVX2+FMA (ops/avx2/attention_tasks.h).
#define HEARTH_ATTN_NS avx2
#include "ops/avx2/attention_tasks.h"
