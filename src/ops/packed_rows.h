// Q8_0, Q4_0, Q5_0, Q4_K, Q6_K, F16 and BF16 weights repacked for the AVX2 kernels: rows in groups
// of 8, interleaved so that a decode step reads each matrix as one sequential stream. For the
// integer formats each 32-bit lane of a vector holds one row. vpmaddubsw + vpmaddwd then leave
// each row's dot product in its own lane, so a group's 8 results need no horizontal sums, and each
// block's 8 scales are one 16-byte load. The copy replaces the file's layout for the matmul (the
// model gives the mapped pages back), it does not add to it: the same bytes per block (Q4_K: 1,184
// bytes for 8 rows' super-blocks instead of 1,152, its 6-bit scales and mins spread to bytes).
//
// Group g (rows 8g .. 8g+7), block b (elements 32b .. 32b+31) at
// (g * n_blocks + b) * packed_block_bytes(type):
//   uint16 d[8]                f16 scale of each row's block, then
//   Q8_0: int8  q[8][8][4]     q[k][r][e] = row 8g+r, element 32b + 4k + e
//   Q4_0: uint8 q[4][8][4]     q[k][r][e] = element 32b + 8k + e (low nibble)
//                                         | element 32b + 8k + 4 + e (high nibble), levels 0..15
//   Q5_0: Q4_0's steps of the levels' low 4 bits, then
//         uint8 h[8][4]        h[r][k]: fifth bits of step k, bit e for element 32b + 8k + e and
//                              bit 4 + e for element 32b + 8k + 4 + e (levels 0..31)
//
// Q4_K, super-block b (elements 256b .. 256b+255) at (g * n_cols/256 + b) * 1184:
//   uint16 d[8], dmin[8]       f16 super-scales of each row
//   uint8  sc[8][8]            sc[j][r]: 6-bit scale of sub-block j (elements 32j..32j+31), row r
//   uint8  mn[4][8][2]         mn[k][r][i]: 6-bit min of sub-block 2k+i, row r
//   uint8  q[32][8][4]         step 4j+k as Q4_0's step k within sub-block j
//
// Q6_K (levels 0..63), super-block b at (g * n_cols/256 + b) * 1680 (the file's size):
//   uint16 d[8]                f16 scale of each row
//   int8   sc[8][8][2]         sc[m][r][i]: scale of 16-element sub-block 2m+i, row r
//   then 16 pairs of steps P (elements 16P .. 16P+15, sub-block P), 96 bytes each:
//     uint8 h[8][4]            h[r][e]: high 2 bits of elements 16P+e, +4+e, +8+e, +12+e
//                              at bits 0-1, 2-3, 4-5, 6-7
//     uint8 l[2][8][4]         l[s][r][e]: low 4 bits of element 16P+8s+e | of +4 << 4
// F16 / BF16 (n_cols a multiple of 8), chunk c (elements 8c .. 8c+7) at (g * n_cols/8 + c) * 128:
//   uint16 w[8][8]             w[r][e] = row 8g+r, element 8c + e, as stored
// (the file's 16 bytes of each row side by side: the float kernels' per-row arithmetic, and so
// their results, are the same on either layout; only the addresses differ).
// A last group with fewer than 8 rows is padded with zero rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/matrix.h"
#include "quant/types.h"

namespace hearth::ops {

// Types with a packed layout (Q8_0, Q4_0, Q5_0, Q4_K, Q6_K, F16, BF16).
bool packable(TensorType t);

// Columns of one packed block: 32, 256 for the K-quants, 8 for F16 / BF16.
int64_t packed_block_cols(TensorType t);

// Bytes of one block of a group of 8 rows.
size_t packed_block_bytes(TensorType t);

// Bytes of the packed copy of an n_rows x n_cols matrix.
size_t packed_bytes(TensorType t, int64_t n_rows, int64_t n_cols);

// Writes the packed copy of w (a packable type, n_cols a multiple of packed_block_cols) to dst.
void pack_rows(const MatrixView& w, uint8_t* dst);

}  // namespace hearth::ops
