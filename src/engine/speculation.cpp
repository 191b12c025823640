#include "engine/speculation.h"

#include <algorithm>

namespace hearth {

const char* spec_mode_name(SpecMode m) {
  switch (m) {
    case SpecMode::Off:
      return "off";
    case SpecMode::Ngram:
      return "ngram";
    case SpecMode::Draft:
      return "draft";
  }
  return "?";
}

std::vector<int32_t> ngram_lookup(std::span<const int32_t> tokens, int ngram_min, int ngram_max,
                                  int64_t max_len) {
  const auto L = static_cast<int64_t>(tokens.size());
  if (max_len <= 0) return {};
  for (int64_t n = std::min<int64_t>(ngram_max, L - 1); n >= std::max(1, ngram_min); --n) {
    const auto suffix = tokens.subspan(static_cast<size_t>(L - n));
    // Most recent occurrence first: nearby text predicts the continuation best. An occurrence
    // must be followed by at least one token.
    for (int64_t at = L - n - 1; at >= 0; --at) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + at)) continue;
      const int64_t from = at + n;
      const int64_t len = std::min(max_len, L - from);
      return {tokens.begin() + from, tokens.begin() + from + len};
    }
  }
  return {};
}

int64_t DraftLength::wanted() {
  if (pause_ > 0) {
    --pause_;
    return 0;
  }
  return len_;
}

void DraftLength::verified(int64_t drafted, int64_t accepted) {
  if (drafted <= 0) return;
  if (accepted >= drafted) {
    len_ = std::min(max_, 2 * len_);
  } else {
    len_ = static_cast<int>(std::clamp<int64_t>(accepted + 1, 1, max_));
  }
  if (accepted > 0) {
    misses_ = 0;
    backoff_ = 1;
    return;
  }
  if (++misses_ >= 2) {
    pause_ = backoff_;
    backoff_ = std::min(64, 2 * backoff_);
  }
}

}  // namespace hearth
