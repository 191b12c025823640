#include "sampling/utf8_partial.h"

namespace hearth {
namespace {

constexpr uint32_t kLowest[] = {0, 0, 0x80, 0x800, 0x10000};  // shortest form, by length
constexpr uint32_t kHighest[] = {0, 0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};

// The valid code points that begin with the bits of p; lo > hi when there are none.
CharRange candidates(const Utf8Partial& p) {
  const uint32_t shift = 6u * p.remaining;
  uint32_t lo = p.bits << shift;
  uint32_t hi = lo | ((1u << shift) - 1);
  if (lo < kLowest[p.length]) lo = kLowest[p.length];
  if (hi > kHighest[p.length]) hi = kHighest[p.length];
  // Surrogates (U+D800..DFFF) are not characters; a prefix range can only touch them at one end.
  if (hi >= 0xD800 && hi <= 0xDFFF) hi = 0xD7FF;
  if (lo >= 0xD800 && lo <= 0xDFFF) lo = 0xE000;
  return {lo, hi};
}

}  // namespace

Utf8Push utf8_push(Utf8Partial& p, uint8_t byte, uint32_t& cp) {
  Utf8Partial next;
  if (!p.pending()) {
    if (byte < 0x80) {
      cp = byte;
      return Utf8Push::kChar;
    }
    if (byte >= 0xC0 && byte <= 0xDF) {
      next = {byte & 0x1Fu, 1, 2};
    } else if (byte >= 0xE0 && byte <= 0xEF) {
      next = {byte & 0x0Fu, 2, 3};
    } else if (byte >= 0xF0 && byte <= 0xF7) {
      next = {byte & 0x07u, 3, 4};
    } else {
      return Utf8Push::kInvalid;  // a continuation byte, or no UTF-8 lead byte at all
    }
  } else {
    if ((byte & 0xC0) != 0x80) return Utf8Push::kInvalid;
    next = {(p.bits << 6) | (byte & 0x3Fu), static_cast<uint8_t>(p.remaining - 1), p.length};
  }
  const CharRange r = candidates(next);
  if (r.lo > r.hi) return Utf8Push::kInvalid;
  if (next.pending()) {
    p = next;
    return Utf8Push::kMore;
  }
  cp = next.bits;
  p = {};
  return Utf8Push::kChar;
}

CharRange utf8_pending_range(const Utf8Partial& p) {
  return candidates(p);
}

}  // namespace hearth
