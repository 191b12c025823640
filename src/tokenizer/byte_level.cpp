#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace hearth {

namespace {

constexpr uint32_t kMaxMapped = 0x100 + 68;  // the highest code point used, plus one

bool self_mapped(uint32_t b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<uint32_t, 256> cp_of_byte{};
  std::array<std::array<char, 2>, 256> utf8{};
  std::array<uint8_t, 256> utf8_len{};
  std::array<int16_t, kMaxMapped> byte_of_cp{};

  Tables() {
    byte_of_cp.fill(-1);
    uint32_t next = 0x100;
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t cp = self_mapped(b) ? b : next++;
      cp_of_byte[b] = cp;
      byte_of_cp[cp] = static_cast<int16_t>(b);
      if (cp < 0x80) {
        utf8[b] = {static_cast<char>(cp), 0};
        utf8_len[b] = 1;
      } else {  // every mapped code point is below U+0800: two bytes
        utf8[b] = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
        utf8_len[b] = 2;
      }
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

std::string_view byte_level_char(uint8_t b) {
  const Tables& t = tables();
  return {t.utf8[b].data(), t.utf8_len[b]};
}

int byte_level_byte(uint32_t cp) {
  return cp < kMaxMapped ? tables().byte_of_cp[cp] : -1;
}

void byte_level_encode_append(std::string_view bytes, std::string& out) {
  const Tables& t = tables();
  for (const char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    out.append(t.utf8[b].data(), t.utf8_len[b]);
  }
}

void byte_level_decode_append(std::string_view text, std::string& out) {
  const Tables& t = tables();
  size_t i = 0;
  while (i < text.size()) {
    const auto c0 = static_cast<uint8_t>(text[i]);
    if (c0 < 0x80) {
      const int b = t.byte_of_cp[c0];
      if (b >= 0) {
        out += static_cast<char>(b);
      } else {
        out += static_cast<char>(c0);
      }
      ++i;
      continue;
    }
    const size_t len = utf8_char_len(text, i);
    if (len == 2) {
      const uint32_t cp = ((c0 & 0x1Fu) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3Fu);
      if (cp < kMaxMapped && t.byte_of_cp[cp] >= 0) {
        out += static_cast<char>(t.byte_of_cp[cp]);
        i += 2;
        continue;
      }
    }
    const size_t n = len == 0 ? 1 : len;
    out.append(text.data() + i, n);
    i += n;
  }
}

}  // namespace hearth
