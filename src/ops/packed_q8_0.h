// Q8_0 weights repacked for the AVX2 kernels: rows in groups of 8, interleaved so that one
// 32-byte vector holds 4 consecutive elements of each of the 8 rows. A kernel then keeps one
// row per 32-bit lane: vpmaddubsw + vpmaddwd leave each row's 4-element dot product in its own
// lane, so a group's 8 results need no horizontal sums, and each block's 8 scales are one
// 16-byte load. The copy replaces the file's layout for the matmul (the mapped pages are
// released), it does not add to it: the same 34 bytes per 32 weights.
//
// Layout: group g (rows 8g .. 8g+7), block b (elements 32b .. 32b+31) at
//   (g * n_blocks + b) * kPackedQ8Bytes:
//     uint16 d[8]            f16 scale of each row's block
//     int8   q[8][8][4]      q[k][r][e] = row 8g+r, element 32b + 4k + e
// A last group with fewer than 8 rows is padded with zero rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/matrix.h"

namespace hearth::ops {

inline constexpr size_t kPackedQ8Bytes = 8 * 2 + 8 * 32;  // one block of a group of 8 rows

// Bytes of the packed copy of a Q8_0 matrix.
size_t packed_q8_0_bytes(int64_t n_rows, int64_t n_cols);

// Writes the packed copy of Q8_0 matrix w (n_cols a multiple of 32) to dst
// (packed_q8_0_bytes of it).
void pack_q8_0(const MatrixView& w, uint8_t* dst);

}  // namespace hearth::ops
