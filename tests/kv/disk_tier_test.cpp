// The disk tier never trusts a file: corrupt, truncated, foreign or misnamed files are ignored
// and removed; valid ones survive a restart and read back byte for byte.
#include "kv/disk_tier.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "kv/prefix_cache.h"

namespace hearth {
namespace {

namespace fs = std::filesystem;

ops::KvLayout layout() {
  ops::KvLayout l;
  l.type = TensorType::F16;
  l.n_kv_head = 1;
  l.head_dim = 32;
  l.block_tokens = 4;
  l.head_major = true;
  return l;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("hearth-disk-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

DiskEntry entry(uint64_t parent, std::vector<int32_t> tokens) {
  DiskEntry e;
  e.parent = parent;
  e.tokens = std::move(tokens);
  e.hash = chain_hash(parent, e.tokens);
  e.has_text = true;
  for (int32_t t : e.tokens) {
    e.text.push_back('t');
    e.text.append(std::to_string(t));
    e.ends.push_back(static_cast<uint32_t>(e.text.size()));
  }
  return e;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

void flip_byte(const fs::path& p, std::streamoff at) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at < 0 ? static_cast<std::streamoff>(fs::file_size(p)) + at : at);
  char c = 0;
  f.read(&c, 1);
  f.seekp(at < 0 ? static_cast<std::streamoff>(fs::file_size(p)) + at : at);
  c = static_cast<char>(c ^ 0x5a);
  f.write(&c, 1);
}

TEST(DiskTier, RoundTripAcrossRestart) {
  TempDir dir;
  const size_t bytes = 1000;
  const DiskEntry a = entry(kChainRoot, {1, 2, 3, 4});
  const DiskEntry b = entry(a.hash, {5, 6});
  {
    DiskTier d(dir.path.string(), "model-x", bytes, 1 << 20);
    d.write(a, pattern(bytes, 1).data());
    d.write(b, pattern(bytes, 2).data());
    std::vector<uint8_t> got(bytes);
    EXPECT_TRUE(d.read(a.hash, a.tokens, got.data()));  // readable while queued or written
    EXPECT_EQ(got, pattern(bytes, 1));
    d.flush();
    EXPECT_EQ(d.stats().writes, 2);
  }
  DiskTier d(dir.path.string(), "model-x", bytes, 1 << 20);
  const auto found = d.scan();
  ASSERT_EQ(found.size(), 2u);
  std::vector<uint8_t> got(bytes);
  EXPECT_TRUE(d.read(b.hash, b.tokens, got.data()));
  EXPECT_EQ(got, pattern(bytes, 2));
  EXPECT_FALSE(d.read(b.hash, std::vector<int32_t>{5, 7}, got.data()));  // not those tokens
}

TEST(DiskTier, CorruptTruncatedForeignAndStrayFilesAreIgnored) {
  TempDir dir;
  const size_t bytes = 512;
  std::vector<DiskEntry> es;
  for (int i = 0; i < 5; ++i) es.push_back(entry(kChainRoot, {10 + i, 20 + i}));
  fs::path sub;
  {
    DiskTier d(dir.path.string(), "model-a", bytes, 1 << 20);
    for (int i = 0; i < 5; ++i) d.write(es[static_cast<size_t>(i)], pattern(bytes, 9).data());
    d.flush();
    sub = d.dir();
  }
  auto file = [&](int i) {
    return sub / fmt::format("{:016x}.kvb", es[static_cast<size_t>(i)].hash);
  };
  flip_byte(file(0), -20);                                       // payload corrupted
  flip_byte(file(1), 30);                                        // header corrupted
  fs::resize_file(file(2), fs::file_size(file(2)) - 100);        // truncated
  fs::rename(file(3), sub / "0123456789abcdef.kvb");             // misnamed
  std::ofstream(sub / "junk.kvb") << "not a cache file";         // garbage
  std::ofstream(sub / "0000000000000001.kvb.tmp") << "partial";  // interrupted write
  {
    // A file written for another model, copied into this model's folder.
    DiskTier other(dir.path.string(), "model-b", bytes, 1 << 20);
    const DiskEntry f = entry(kChainRoot, {99});
    other.write(f, pattern(bytes, 3).data());
    other.flush();
    fs::copy_file(fs::path(other.dir()) / fmt::format("{:016x}.kvb", f.hash),
                  sub / fmt::format("{:016x}.kvb", f.hash));
  }

  DiskTier d(dir.path.string(), "model-a", bytes, 1 << 20);
  const auto found = d.scan();
  // Header checks find all but the payload corruption, which read() catches.
  ASSERT_EQ(found.size(), 2u);
  std::vector<uint8_t> got(bytes);
  EXPECT_FALSE(d.read(es[0].hash, es[0].tokens, got.data()));
  EXPECT_FALSE(fs::exists(file(0))) << "a corrupt file is removed";
  EXPECT_TRUE(d.read(es[4].hash, es[4].tokens, got.data()));
  EXPECT_EQ(got, pattern(bytes, 9));
  size_t left = 0;
  for (const auto& p : fs::directory_iterator(sub)) {
    (void)p;
    ++left;
  }
  EXPECT_EQ(left, 1u) << "only the valid file remains";
  EXPECT_GE(d.stats().rejected, 6);
}

// A FIFO in the cache folder (under a block's own name, or any other) would block a read
// forever: the scan and the reads pass it by, and a write in its place fails at once.
TEST(DiskTier, FifosInTheFolderAreSkippedWithoutBlocking) {
  TempDir dir;
  const size_t bytes = 256;
  const DiskEntry a = entry(kChainRoot, {1, 2}), b = entry(kChainRoot, {3, 4});
  fs::path sub;
  {
    DiskTier d(dir.path.string(), "model-f", bytes, 1 << 20);
    d.write(a, pattern(bytes, 4).data());
    d.flush();
    sub = d.dir();
  }
  const auto name = [&](const DiskEntry& e) { return sub / fmt::format("{:016x}.kvb", e.hash); };
  ASSERT_EQ(::mkfifo(name(b).c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo((sub / "stray.fifo").c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  DiskTier d(dir.path.string(), "model-f", bytes, 1 << 20);
  const auto found = d.scan();
  ASSERT_EQ(found.size(), 1u);
  std::vector<uint8_t> got(bytes);
  EXPECT_TRUE(d.read(a.hash, a.tokens, got.data()));
  EXPECT_FALSE(d.read(b.hash, b.tokens, got.data()));
  EXPECT_FALSE(d.probe(b.hash, b.tokens));
  d.write(b, pattern(bytes, 5).data());
  d.flush();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
}

// The one LRU trim every disk tier of the cache uses: over budget, the entry used longest ago
// goes first (the first listed among equals), until the tier fits or nothing is left to drop.
TEST(DiskTier, TrimLruDropsTheLeastRecentlyUsedUntilWithinBudget) {
  TempDir dir;
  const size_t bytes = 256;
  std::vector<DiskEntry> es;
  for (int i = 0; i < 4; ++i) es.push_back(entry(kChainRoot, {10 * i, 10 * i + 1}));
  DiskTier probe(dir.path.string(), "probe", bytes, 1ull << 30);
  probe.write(es[0], pattern(bytes, 1).data());
  probe.flush();
  const uint64_t one = probe.bytes();  // one file's size
  DiskTier d(dir.path.string(), "m", bytes, 2 * one + one / 2);
  std::map<uint64_t, uint64_t> last_used = {
      {es[0].hash, 5}, {es[1].hash, 2}, {es[2].hash, 7}, {es[3].hash, 2}};
  for (const DiskEntry& e : es) d.write(e, pattern(bytes, 3).data());
  d.flush();
  std::vector<uint64_t> dropped;
  auto candidates = [&] {
    std::vector<std::pair<uint64_t, uint64_t>> v;
    for (const DiskEntry& e : es)
      if (last_used.count(e.hash)) v.emplace_back(last_used[e.hash], e.hash);
    return v;
  };
  trim_lru(d, candidates, [&](uint64_t h) {
    d.remove(h);
    last_used.erase(h);
    dropped.push_back(h);
  });
  EXPECT_EQ(dropped, (std::vector<uint64_t>{es[1].hash, es[3].hash}));
  EXPECT_LE(d.bytes(), d.max_bytes());
  // Nothing left to offer: it stops, over budget or not.
  DiskTier tiny(dir.path.string(), "tiny", bytes, 1);
  tiny.write(es[0], pattern(bytes, 4).data());
  tiny.flush();
  int calls = 0;
  trim_lru(
      tiny, [] { return std::vector<std::pair<uint64_t, int>>{}; }, [&](int) { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_GT(tiny.bytes(), tiny.max_bytes());
}

TEST(PrefixCacheDisk, EvictedBlocksComeBackAndCorruptOnesAreRecomputed) {
  TempDir dir;
  BlockPool pool(layout(), 2, 6);
  const size_t stride = pool.arena().block_stride();
  DiskTier disk(dir.path.string(), "m", stride, 1 << 30);
  PrefixCache cache(pool, &disk);
  // Three sequences of 3 blocks each (12 tokens), sharing nothing.
  std::vector<std::vector<int32_t>> seqs;
  for (int s = 0; s < 3; ++s) {
    std::vector<int32_t> t;
    for (int i = 0; i < 12; ++i) t.push_back(100 * s + i);
    seqs.push_back(t);
    std::vector<int32_t> blocks;
    for (int b = 0; b < 3; ++b) {
      auto id = pool.allocate();
      while (!id && cache.evict_one()) id = pool.allocate();
      ASSERT_TRUE(id.has_value());
      const auto p = pattern(stride, static_cast<uint8_t>(10 * s + b));
      std::memcpy(pool.arena().k(*id, 0), p.data(), stride);
      blocks.push_back(*id);
    }
    cache.insert(t, blocks);
  }
  EXPECT_GT(cache.stats().evictions, 0);
  // Sequence 0 was evicted first (LRU); matching it reads it back, byte for byte.
  PrefixMatch m = cache.match(seqs[0], 12);
  ASSERT_EQ(m.n_tokens(), 12);
  EXPECT_GT(m.disk_tokens, 0);
  for (int b = 0; b < 3; ++b) {
    const auto p = pattern(stride, static_cast<uint8_t>(b));
    EXPECT_EQ(std::memcmp(pool.arena().k(m.blocks[static_cast<size_t>(b)], 0), p.data(), stride),
              0);
  }
  for (int32_t b : m.blocks) pool.release(b);
  // Now corrupt sequence 1's middle block on disk (after evicting it): the match stops before
  // it — recomputation, never bad data.
  while (cache.evict_one()) {
  }
  disk.flush();
  const uint64_t h0 = chain_hash(kChainRoot, std::span(seqs[1]).first(4));
  const uint64_t h1 = chain_hash(h0, std::span(seqs[1]).subspan(4, 4));
  flip_byte(fs::path(disk.dir()) / fmt::format("{:016x}.kvb", h1), -9);
  m = cache.match(seqs[1], 12);
  EXPECT_EQ(m.n_tokens(), 4);
  for (int32_t b : m.blocks) pool.release(b);
}

// One "process" of a shared cache folder: its own pool, disk tier and cache over `dir`.
struct Replica {
  BlockPool pool;
  DiskTier disk;
  PrefixCache cache;
  Replica(const fs::path& dir, const char* identity)
      : pool(layout(), 2, 8),
        disk(dir.string(), identity, pool.arena().block_stride(), 1 << 30),
        cache(pool, &disk) {}
  // Caches `tokens` (with per-token text) in blocks filled with pattern(seed + block index).
  void insert(std::span<const int32_t> tokens, const std::string& text,
              std::span<const uint32_t> ends, uint8_t seed) {
    const size_t stride = pool.arena().block_stride();
    std::vector<int32_t> blocks;
    for (size_t b = 0; b * 4 < tokens.size(); ++b) {
      auto id = pool.allocate();
      ASSERT_TRUE(id.has_value());
      const auto p = pattern(stride, static_cast<uint8_t>(seed + b));
      std::memcpy(pool.arena().k(*id, 0), p.data(), stride);
      blocks.push_back(*id);
    }
    cache.insert(tokens, blocks, TokenText{text, ends});
  }
  bool block_is(int32_t block, uint8_t seed) {
    const size_t stride = pool.arena().block_stride();
    return std::memcmp(pool.arena().k(block, 0), pattern(stride, seed).data(), stride) == 0;
  }
};

// Several processes on one --cache-dir: blocks another one wrote after this one scanned the
// folder are found by their hash-chain names on a miss (token matches), and after a text match
// that stops where this process's tree does; the bytes are the writer's, and a file of another
// identity (model, KV type or geometry) is never taken.
TEST(PrefixCacheDisk, SharedFolderBlocksAnotherProcessWroteAreFoundByName) {
  TempDir dir;
  std::vector<int32_t> seq;
  std::string text;
  std::vector<uint32_t> ends;
  for (int i = 0; i < 12; ++i) {
    seq.push_back(500 + i);
    text.push_back('w');  // (appended piece by piece: GCC 12 misreports "w" + s + " ")
    text.append(std::to_string(i));
    text.push_back(' ');
    ends.push_back(static_cast<uint32_t>(text.size()));
  }
  Replica writer(dir.path, "m"), reader(dir.path, "m"), texter(dir.path, "m"),
      partial(dir.path, "m"), foreign(dir.path, "other");
  // `texter` already holds the first block (the same tokens and text, its own bytes).
  texter.insert(std::span(seq).first(4), text.substr(0, ends[3]), std::span(ends).first(4), 90);
  writer.insert(seq, text, ends, 10);
  writer.cache.flush_to_disk();
  writer.disk.flush();

  PrefixMatch m = reader.cache.match(seq, 12);
  ASSERT_EQ(m.n_tokens(), 12);
  EXPECT_EQ(m.disk_tokens, 12);
  EXPECT_EQ(reader.cache.stats().probed_blocks, 3);
  for (int b = 0; b < 3; ++b)
    EXPECT_TRUE(reader.block_is(m.blocks[static_cast<size_t>(b)], static_cast<uint8_t>(10 + b)));
  for (int32_t b : m.blocks) reader.pool.release(b);
  // Now in the reader's tree: a second match takes them from memory, probing nothing.
  m = reader.cache.match(seq, 12);
  EXPECT_EQ(m.n_tokens(), 12);
  EXPECT_EQ(m.disk_tokens, 0);
  EXPECT_EQ(reader.cache.stats().probed_blocks, 3);
  for (int32_t b : m.blocks) reader.pool.release(b);

  m = texter.cache.match_text({}, text, 12);
  ASSERT_EQ(m.n_tokens(), 4);  // its own block, by text
  texter.cache.extend_from_disk(m, seq, 12);
  ASSERT_EQ(m.n_tokens(), 12);
  EXPECT_EQ(m.disk_tokens, 8);
  EXPECT_EQ(m.tokens, seq);
  EXPECT_TRUE(texter.block_is(m.blocks[0], 90));
  EXPECT_TRUE(texter.block_is(m.blocks[1], 11));
  EXPECT_TRUE(texter.block_is(m.blocks[2], 12));
  ASSERT_EQ(m.ends.size(), 12u);
  EXPECT_EQ(m.ends.back(), ends.back());
  for (int32_t b : m.blocks) texter.pool.release(b);

  // A text match that ends inside a block (another path shares only the first 2 tokens) is cut
  // back to the block boundary when the folder continues further.
  const std::vector<int32_t> other = {500, 501, 999, 998};
  const std::vector<uint32_t> other_ends = {ends[0], ends[1], ends[1] + 3, ends[1] + 6};
  partial.insert(other, text.substr(0, ends[1]) + "xx yy ", other_ends, 70);
  m = partial.cache.match_text({}, text, 12);
  ASSERT_EQ(m.n_tokens(), 2);
  partial.cache.extend_from_disk(m, seq, 12);
  ASSERT_EQ(m.n_tokens(), 12);
  EXPECT_EQ(m.tokens, seq);
  ASSERT_EQ(m.blocks.size(), 3u);
  EXPECT_TRUE(partial.block_is(m.blocks[0], 10));
  for (int32_t b : m.blocks) partial.pool.release(b);

  m = foreign.cache.match(seq, 12);
  EXPECT_EQ(m.n_tokens(), 0);
  EXPECT_EQ(foreign.cache.stats().probed_blocks, 0);
}

// --cache-shared: whole blocks reach the folder when they are cached, not only when evicted or
// at shutdown, so a server killed without a flush (SIGKILL) leaves them to the others; a partial
// last block is not written (its K/V is not final).
TEST(PrefixCacheDisk, WriteThroughLeavesWholeBlocksWithoutAFlush) {
  TempDir dir;
  std::vector<int32_t> seq;
  for (int i = 0; i < 10; ++i) seq.push_back(700 + i);  // two whole blocks and 2 tokens
  Replica reader(dir.path, "m");
  {
    Replica writer(dir.path, "m");
    writer.cache.set_write_through(true);
    writer.insert(seq, "", {}, 40);
    writer.disk.flush();  // the queued writes (no flush_to_disk, no eviction)
    EXPECT_EQ(writer.disk.stats().writes, 2);
    EXPECT_EQ(writer.cache.stats().evictions, 0);
  }
  PrefixMatch m = reader.cache.match(seq, 10);
  ASSERT_EQ(m.n_tokens(), 8);
  EXPECT_TRUE(reader.block_is(m.blocks[0], 40));
  EXPECT_TRUE(reader.block_is(m.blocks[1], 41));
  for (int32_t b : m.blocks) reader.pool.release(b);
  // Off (the default), nothing is written before an eviction or a flush.
  Replica plain(dir.path, "p");
  plain.insert(seq, "", {}, 50);
  plain.disk.flush();
  EXPECT_EQ(plain.disk.stats().writes, 0);
}

}  // namespace
}  // namespace hearth
