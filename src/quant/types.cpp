#include "quant/types.h"

#include <array>
#include <cctype>

#include "util/error.h"

namespace hearth {
namespace {

constexpr std::array<TypeTraits, 31> kTypes{{
    {TensorType::F32, "F32", 1, 4},          {TensorType::F16, "F16", 1, 2},
    {TensorType::Q4_0, "Q4_0", 32, 18},      {TensorType::Q4_1, "Q4_1", 32, 20},
    {TensorType::Q5_0, "Q5_0", 32, 22},      {TensorType::Q5_1, "Q5_1", 32, 24},
    {TensorType::Q8_0, "Q8_0", 32, 34},      {TensorType::Q8_1, "Q8_1", 32, 36},
    {TensorType::Q2_K, "Q2_K", 256, 84},     {TensorType::Q3_K, "Q3_K", 256, 110},
    {TensorType::Q4_K, "Q4_K", 256, 144},    {TensorType::Q5_K, "Q5_K", 256, 176},
    {TensorType::Q6_K, "Q6_K", 256, 210},    {TensorType::Q8_K, "Q8_K", 256, 292},
    {TensorType::IQ2_XXS, "IQ2_XXS", 256, 66}, {TensorType::IQ2_XS, "IQ2_XS", 256, 74},
    {TensorType::IQ3_XXS, "IQ3_XXS", 256, 98}, {TensorType::IQ1_S, "IQ1_S", 256, 50},
    {TensorType::IQ4_NL, "IQ4_NL", 32, 18},  {TensorType::IQ3_S, "IQ3_S", 256, 110},
    {TensorType::IQ2_S, "IQ2_S", 256, 82},   {TensorType::IQ4_XS, "IQ4_XS", 256, 136},
    {TensorType::I8, "I8", 1, 1},            {TensorType::I16, "I16", 1, 2},
    {TensorType::I32, "I32", 1, 4},          {TensorType::I64, "I64", 1, 8},
    {TensorType::F64, "F64", 1, 8},          {TensorType::IQ1_M, "IQ1_M", 256, 56},
    {TensorType::BF16, "BF16", 1, 2},        {TensorType::TQ1_0, "TQ1_0", 256, 54},
    {TensorType::TQ2_0, "TQ2_0", 256, 66},
}};

}  // namespace

std::optional<TypeTraits> type_traits(uint32_t type_id) {
  for (const auto& t : kTypes)
    if (static_cast<uint32_t>(t.type) == type_id) return t;
  return std::nullopt;
}

const TypeTraits& traits(TensorType t) {
  for (const auto& tr : kTypes)
    if (tr.type == t) return tr;
  fail("unknown tensor type id {}", static_cast<uint32_t>(t));
}

std::string_view type_name(TensorType t) { return traits(t).name; }

std::optional<TensorType> type_from_name(std::string_view name) {
  for (const auto& tr : kTypes) {
    if (tr.name.size() != name.size()) continue;
    bool eq = true;
    for (size_t i = 0; i < name.size() && eq; ++i)
      eq = std::toupper(static_cast<unsigned char>(name[i])) == tr.name[i];
    if (eq) return tr.type;
  }
  return std::nullopt;
}

}  // namespace hearth
