// Tensor element types as numbered by GGML/GGUF, with their block geometry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace hearth {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
};

struct TypeTraits {
  TensorType type;
  std::string_view name;
  uint32_t block_elems;  // elements per block (1 for plain types)
  uint32_t block_bytes;  // bytes per block
};

// Geometry of a known type id, or nullopt for an id this build does not know.
std::optional<TypeTraits> type_traits(uint32_t type_id);
const TypeTraits& traits(TensorType t);  // t must be a known type
std::string_view type_name(TensorType t);
std::optional<TensorType> type_from_name(std::string_view name);  // case-insensitive

// Bytes of one row of n elements; n must be a multiple of the block size.
inline size_t row_bytes(TensorType t, int64_t n) {
  const TypeTraits& tr = traits(t);
  return static_cast<size_t>(n / tr.block_elems) * tr.block_bytes;
}

}  // namespace hearth
