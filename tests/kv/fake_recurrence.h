// A stand-in for a recurrent layer's forward pass in KV-layer tests: a state that is an exact
// function of every token so far (as a real recurrent state is), kept in the first few floats of
// a slot, so a restored state is right only if it was taken after exactly the matched tokens.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "kv/kv_manager.h"

namespace hearth::test {

constexpr int64_t kFakeStateFloats = 4;

// Small integers, exact in f32.
inline void advance(float* s, int32_t token) {
  s[0] += 1;                                 // tokens seen
  s[1] += static_cast<float>(token) * s[0];  // position-weighted sum
  s[2] = static_cast<float>(token);          // last token
  s[3] = static_cast<float>((static_cast<int64_t>(s[3]) * 31 + token) % 65521);
}

inline std::vector<float> state_after(std::span<const int32_t> tokens) {
  std::vector<float> s(kFakeStateFloats, 0.0f);
  for (int32_t t : tokens) advance(s.data(), t);
  return s;
}

inline std::vector<float> fake_state_of(const KvManager& kv, int64_t id) {
  const float* p = kv.arena().state.slot(kv.state_slot(id));
  return {p, p + kFakeStateFloats};
}

// Computes tokens [from, to) as the engine does: prefill chunks end where the manager wants a
// snapshot (SeqFacts::stop_at), and it is told after each chunk.
inline void compute(KvManager& kv, int64_t id, std::span<const int32_t> tokens, int64_t from,
                    int64_t to) {
  for (int64_t at = from; at < to;) {
    const int64_t stop = kv.snapshot_stop(id, at);
    const int64_t end = stop > at ? std::min(stop, to) : to;
    ASSERT_TRUE(kv.allocate_slots(id, at, end - at));
    float* s = kv.arena().state.slot(kv.state_slot(id));
    for (int64_t p = at; p < end; ++p) advance(s, tokens[static_cast<size_t>(p)]);
    at = end;
    kv.computed({id, tokens, at, {}});
  }
}

}  // namespace hearth::test
