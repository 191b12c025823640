// Recurrent-state snapshots in the prefix cache, through the KV manager, with a stand-in for the
// forward pass (kv/fake_recurrence.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <numeric>
#include <vector>

#include "kv/fake_recurrence.h"
#include "kv/kv_manager.h"
#include "kv/kv_test_util.h"

namespace hearth {
namespace {

constexpr int64_t kFloats = test::kFakeStateFloats;

KvGeometry hybrid_geometry() {
  KvGeometry g = test::small_f16_geometry(8, 1);
  g.state.layer_offset = {0, -1};  // a recurrent layer, then an attention layer
  g.state.slot_floats = kFloats;
  return g;
}

KvCacheOptions options(size_t snapshot_slots = 64) {
  KvCacheOptions c;
  c.max_sequences = 4;
  c.snapshot_bytes = snapshot_slots * kFloats * sizeof(float);
  c.snapshot_interval = 8;
  return c;
}

using test::compute;
using test::state_after;

std::vector<float> slot_of(const KvManager& kv, int64_t id) {
  return test::fake_state_of(kv, id);
}

using test::iota_tokens;

// Admits a prompt and prefills it; returns the tokens the cache covered.
int64_t run_prompt(KvManager& kv, int64_t id, std::span<const int32_t> prompt) {
  const int64_t cached = kv.attach(id, prompt, 1000);
  EXPECT_EQ(slot_of(kv, id), state_after(prompt.first(static_cast<size_t>(cached))));
  compute(kv, id, prompt, cached, static_cast<int64_t>(prompt.size()));
  return cached;
}

TEST(SnapshotCache, AttentionOnlyModelsHaveNoStateAndNoStops) {
  KvGeometry g = hybrid_geometry();
  g.state = {};
  KvManager kv(g, g.bytes_per_block() * 8, options());
  EXPECT_FALSE(kv.recurrent());
  ASSERT_TRUE(kv.allocate_slots(1, 0, 5));
  EXPECT_EQ(kv.state_slot(1), -1);
  EXPECT_EQ(kv.snapshot_stop(1, 0), 0);
  EXPECT_EQ(kv.arena().state.n_slots, 0);
}

// The golden scenarios' rules: a repeat resumes at n-1, a continuation at the end of the turn,
// a request leaving a cached path at the last snapshot before it (and snapshots its branch point
// for the next one), never past the match.
TEST(SnapshotCache, AHitResumesAtTheLastSnapshotAtOrBeforeTheMatch) {
  const KvGeometry g = hybrid_geometry();
  KvManager kv(g, g.bytes_per_block() * 32, options());
  std::vector<int32_t> p = iota_tokens(41);
  EXPECT_EQ(run_prompt(kv, 1, p), 0);
  p.push_back(7);  // the sampled token: one more cache-only row, then the whole turn is cached
  EXPECT_TRUE(kv.finish_turn({1, p, 41, {}}));
  compute(kv, 1, p, 41, 42);
  kv.cache_finished({1, p, 42, {}});

  p.pop_back();
  EXPECT_EQ(run_prompt(kv, 2, p), 40);  // repeat: the last prompt token runs for logits
  kv.free(2);

  std::vector<int32_t> next = p;
  next.insert(next.end(), {7, 1, 2, 3});
  EXPECT_EQ(run_prompt(kv, 3, next), 42);  // the next turn: after the whole reply
  kv.free(3);

  // Leaves the path at 20: resumes at 16 (the interval snapshot), snapshots 20 on the way.
  std::vector<int32_t> branch = iota_tokens(20);
  for (int i = 0; i < 21; ++i) branch.push_back(400 + i);
  EXPECT_EQ(kv.snapshot_stop(4, 0), 8);
  EXPECT_EQ(run_prompt(kv, 4, branch), 16);
  kv.cache_finished({4, branch, 41, {}});
  std::vector<int32_t> third = iota_tokens(20);
  third.insert(third.end(), {9, 9, 9});
  EXPECT_EQ(run_prompt(kv, 5, third), 20);  // the branch point
  kv.free(5);
  EXPECT_EQ(kv.attach(6, third, 19), 16);  // never past max_tokens
  kv.free(6);
  EXPECT_EQ(kv.attach(7, iota_tokens(15), 1000), 8);
  kv.free(7);
  EXPECT_EQ(kv.attach(8, iota_tokens(7), 1000), 0);  // nothing before: from zeros
  EXPECT_EQ(slot_of(kv, 8), state_after({}));
  kv.free(8);
  EXPECT_GT(kv.cache_stats()->cut_tokens, 0);
  EXPECT_EQ(kv.pool().n_free() + kv.cache_only_blocks(), kv.n_blocks());
}

TEST(SnapshotCache, SnapshotsStayWithinTheirBudgetIntervalOnesGoFirst) {
  const KvGeometry g = hybrid_geometry();
  KvManager kv(g, g.bytes_per_block() * 64, options(6));
  EXPECT_EQ(kv.snapshot_interval(), 8);
  const std::vector<int32_t> a = iota_tokens(30);
  run_prompt(kv, 1, a);               // 8, 16, 24 (interval), 29 (prompt end - 1)
  kv.cache_finished({1, a, 30, {}});  // 30 (anchor)
  EXPECT_EQ(kv.cache_stats()->snapshots, 5);
  EXPECT_GT(kv.snapshot_interval(), 8);  // the store is more than half full: sparser

  const std::vector<int32_t> b = iota_tokens(70, 300);
  run_prompt(kv, 2, b);
  kv.cache_finished({2, b, 70, {}});
  const PrefixCacheStats st = *kv.cache_stats();
  EXPECT_LE(st.snapshots, 6);
  EXPECT_GT(st.snapshot_evictions, 0);
  EXPECT_EQ(kv.states().n_snapshots(), st.snapshots);
  // a's end (an anchor) outlived every interval snapshot, 29 (a repeat's) included: its
  // continuation still resumes there, a repeat of its prompt recomputes.
  std::vector<int32_t> more = a;
  more.push_back(5);
  EXPECT_EQ(run_prompt(kv, 4, more), 30);
  kv.free(4);
  EXPECT_EQ(run_prompt(kv, 3, a), 0);
  kv.free(3);

  // With only anchors left, an interval snapshot is skipped instead of evicting one.
  KvManager full(g, g.bytes_per_block() * 64, options(2));
  const std::vector<int32_t> c = iota_tokens(9, 600), d = iota_tokens(9, 700);
  for (const auto* p : {&c, &d}) {
    full.attach(5, *p, 1000);
    compute(full, 5, *p, 0, 9);
    full.cache_finished({5, *p, 9, {}});
  }
  const std::vector<int32_t> e = iota_tokens(60, 800);
  run_prompt(full, 6, e);
  full.free(6);
  for (const auto* p : {&c, &d}) {
    std::vector<int32_t> next = *p;
    next.push_back(1);
    EXPECT_EQ(full.attach(7, next, 1000), 9);
    full.free(7);
  }
}

// Blocks evicted without a disk tier take their snapshots with them; a hit never restores a
// state whose blocks are gone, and the slots come back.
TEST(SnapshotCache, EvictedBlocksTakeTheirSnapshots) {
  const KvGeometry g = hybrid_geometry();
  KvManager kv(g, g.bytes_per_block() * 6, options());
  const std::vector<int32_t> a = iota_tokens(40);
  run_prompt(kv, 1, a);
  kv.cache_finished({1, a, 40, {}});
  const int64_t before = kv.cache_stats()->snapshots;
  ASSERT_GT(before, 0);
  ASSERT_TRUE(kv.allocate_slots(2, 0, 48));  // the whole pool: every cached block goes
  EXPECT_EQ(kv.cache_stats()->snapshots, 0);
  EXPECT_EQ(kv.states().n_snapshots(), 0);
  kv.free(2);
  EXPECT_EQ(kv.attach(3, a, 1000), 0);
  EXPECT_EQ(slot_of(kv, 3), state_after({}));
  kv.free(3);
}

// Preemption caches the computed tokens with a snapshot: readmission resumes exactly there.
TEST(SnapshotCache, PreemptionResumesFromItsSnapshot) {
  const KvGeometry g = hybrid_geometry();
  KvManager kv(g, g.bytes_per_block() * 16, options());
  const std::vector<int32_t> a = iota_tokens(50);
  ASSERT_EQ(kv.attach(1, a, 1000), 0);
  compute(kv, 1, a, 0, 27);
  kv.preempt({1, a, 27, {}});
  EXPECT_EQ(kv.state_slot(1), -1);
  EXPECT_EQ(run_prompt(kv, 1, a), 27);
  kv.free(1);
  EXPECT_EQ(kv.states().n_free() + kv.states().n_snapshots(), kv.states().n_slots());
}

// A text match is cut back to a snapshot too, and the sequence adopts only the cached tokens up
// to it (the text after them is tokenized afresh); a snapshot after a token without text of its
// own (bytes held back for a later token) is passed over.
TEST(SnapshotCache, TextMatchesAreCutBackToASnapshot) {
  const KvGeometry g = hybrid_geometry();
  KvManager kv(g, g.bytes_per_block() * 16, options());
  std::vector<int32_t> a = iota_tokens(20);
  std::string text;
  std::vector<uint32_t> ends;
  for (int i = 0; i < 20; ++i) {
    if (i != 15) text += static_cast<char>('a' + i);  // token 15 stands for no text yet
    ends.push_back(static_cast<uint32_t>(text.size()));
  }
  ASSERT_EQ(kv.attach(1, a, 1000), 0);
  test::compute(kv, 1, a, 0, 20);  // snapshots at 8, 16 (interval) and 19 (prompt end - 1)
  kv.cache_finished({1, a, 20, {text, ends}});

  // The hit's tokens, then eight of the prompt's own; returns the tokens attached.
  auto admit = [&](int64_t id, std::string_view prompt, int64_t max_tokens) {
    const TextHit hit = kv.match_text(id, {}, prompt, max_tokens);
    std::vector<int32_t> tokens = hit.tokens;
    tokens.insert(tokens.end(), {900, 901, 902, 903, 904, 905, 906, 907});
    EXPECT_EQ(hit.text_bytes, static_cast<size_t>(hit.n_tokens()));  // one byte per token
    return std::pair(kv.attach(id, tokens, max_tokens), tokens);
  };
  const std::string diverging = text.substr(0, 12) + "XYZ";  // diverges after 12 tokens
  auto [n2, tokens2] = admit(2, diverging, 1000);
  EXPECT_EQ(n2, 8);
  EXPECT_EQ(tokens2.size(), 16u);
  EXPECT_EQ(slot_of(kv, 2), state_after(std::span(a).first(8)));
  kv.free(2);

  // 17 tokens match (max_tokens), but the snapshot at 16 follows token 15, which has no text of
  // its own: the match is cut back to 8.
  const std::string longer = text.substr(0, 17) + "XYZ";
  EXPECT_EQ(admit(3, longer, 17).first, 8);
  EXPECT_EQ(slot_of(kv, 3), state_after(std::span(a).first(8)));
  kv.free(3);
}

// Editing the same message twice: the first edit leaves the cached path at token 11 and
// snapshots there on its own branch; the second edit shares 12 tokens with the first edit's
// branch (one more than with the original), and still resumes at 11 from that snapshot.
TEST(SnapshotCache, ASecondEditResumesAtTheFirstEditsBranchPoint) {
  const KvGeometry g = hybrid_geometry();
  KvManager kv(g, g.bytes_per_block() * 32, options());
  const std::vector<int32_t> original = iota_tokens(14);  // snapshots at 8 and 13
  EXPECT_EQ(run_prompt(kv, 1, original), 0);
  kv.cache_finished({1, original, 14, {}});

  std::vector<int32_t> edit1 = iota_tokens(11);
  edit1.insert(edit1.end(), {500, 501, 502});  // leaves the path after 11 tokens
  EXPECT_EQ(run_prompt(kv, 2, edit1), 8);
  kv.cache_finished({2, edit1, 14, {}});

  std::vector<int32_t> edit2 = iota_tokens(11);
  edit2.insert(edit2.end(), {500, 600, 601});  // shares 12 tokens with edit1, 11 with original
  EXPECT_EQ(run_prompt(kv, 3, edit2), 11);
  kv.free(3);
}

std::string temp_dir(const char* what) {
  const auto dir = std::filesystem::temp_directory_path() /
                   (std::string("hearth-snapshots-") + what + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

KvCacheOptions on_disk(const std::string& dir, size_t snapshot_slots = 64) {
  KvCacheOptions o = options(snapshot_slots);
  o.dir = dir;
  o.model_hash = "test";
  return o;
}

// Snapshots written at shutdown come back after a restart with the paths they belong to.
TEST(SnapshotCache, ARestartResumesFromSnapshotFiles) {
  const std::string dir = temp_dir("restart");
  const KvGeometry g = hybrid_geometry();
  const std::vector<int32_t> a = iota_tokens(30);
  {
    KvManager kv(g, g.bytes_per_block() * 16, on_disk(dir));
    run_prompt(kv, 1, a);
    kv.cache_finished({1, a, 30, {}});
  }
  {
    KvManager kv(g, g.bytes_per_block() * 16, on_disk(dir));
    EXPECT_EQ(kv.cache_stats()->snapshots, 0);
    EXPECT_GT(kv.cache_stats()->snapshots_on_disk, 0);
    EXPECT_EQ(run_prompt(kv, 2, a), 29);  // run_prompt checks the restored state
    kv.free(2);
    EXPECT_EQ(kv.cache_stats()->snapshot_disk_hits, 1);
    std::vector<int32_t> more = a;
    more.push_back(3);
    EXPECT_EQ(run_prompt(kv, 3, more), 30);
    kv.free(3);
  }
  std::filesystem::remove_all(dir);
}

// Beyond their memory budget snapshots go to disk and are read back on a hit; a corrupt file is
// never trusted: the match is cut back past it (here to nothing) and recomputes.
TEST(SnapshotCache, EvictedSnapshotsComeBackFromDiskAndCorruptOnesAreSkipped) {
  const std::string dir = temp_dir("spill");
  const KvGeometry g = hybrid_geometry();
  const std::vector<int32_t> a = iota_tokens(40);
  {
    KvManager kv(g, g.bytes_per_block() * 32, on_disk(dir, 2));
    run_prompt(kv, 1, a);  // 8, 16 (interval), 32 (sparser: the store is full), 39, 40
    kv.cache_finished({1, a, 40, {}});
    const PrefixCacheStats st = *kv.cache_stats();
    EXPECT_EQ(st.snapshots, 2);
    EXPECT_EQ(st.snapshots_on_disk, 3);
    EXPECT_EQ(run_prompt(kv, 2, iota_tokens(17)), 16);  // from disk, state checked
    kv.free(2);
    EXPECT_EQ(kv.cache_stats()->snapshot_disk_hits, 1);
  }
  for (const auto& sub : std::filesystem::directory_iterator(dir))
    if (sub.path().string().find("-state-") != std::string::npos)
      for (const auto& f : std::filesystem::directory_iterator(sub.path())) {
        std::FILE* fp = std::fopen(f.path().c_str(), "r+b");
        ASSERT_NE(fp, nullptr);
        std::fseek(fp, -8, SEEK_END);
        std::fputs("garbage!", fp);
        std::fclose(fp);
      }
  {
    KvManager kv(g, g.bytes_per_block() * 32, on_disk(dir, 2));
    EXPECT_EQ(kv.cache_stats()->snapshots_on_disk, 5);
    EXPECT_EQ(run_prompt(kv, 3, a), 0);  // the blocks are fine, no state can be trusted
    kv.free(3);
    EXPECT_EQ(kv.cache_stats()->snapshot_disk_hits, 0);
    EXPECT_EQ(kv.cache_stats()->cut_tokens, 39);
    EXPECT_EQ(kv.snapshot_disk_stats().rejected, 4);  // 39, 32, 16, 8 tried in turn
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hearth
