// The prefix cache's disk tier: evicted KV blocks as files, read back on a hit instead of being
// recomputed, surviving restarts.
//
// Layout: DIR/<identity>/<hash>.kvb, where <identity> names the model file's content hash, the KV
// type and the block geometry, and <hash> is the chain hash of the token prefix the block ends
// (chain_hash). A file holds a header (identity, hash, parent hash, the block's tokens and text)
// with its own checksum, then the block's bytes with theirs. Files are written to a temporary
// name and renamed, by a background thread, so a write never stalls decoding. A file that is
// corrupt, truncated, foreign (another identity) or does not hold the expected tokens is
// ignored and removed — never trusted.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace hearth {

// Hash of a block's tokens chained onto the hash of everything before it.
uint64_t chain_hash(uint64_t parent, std::span<const int32_t> tokens);
inline constexpr uint64_t kChainRoot = 0x6865617274680001ull;

// Content hash of a file (hex), for disk-tier identities.
std::string file_content_hash(std::span<const uint8_t> bytes);

struct DiskEntry {
  uint64_t hash = 0;
  uint64_t parent = 0;
  std::vector<int32_t> tokens;
  bool has_text = false;
  std::string text;
  std::vector<uint32_t> ends;
};

struct DiskTierStats {
  int64_t writes = 0, reads = 0, removed = 0, rejected = 0;  // rejected: corrupt/foreign files
  int64_t bytes_written = 0, bytes_read = 0;
  int64_t files = 0, bytes = 0;  // now on disk
};

class DiskTier {
 public:
  // `identity`: a name that changes with the model's content, the KV type and block geometry.
  DiskTier(std::string dir, std::string identity, size_t block_bytes, uint64_t max_bytes);
  ~DiskTier();  // finishes pending writes
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  // Valid entries on disk (removing invalid files), for the cache to rebuild its tree.
  std::vector<DiskEntry> scan();
  // Queues a copy of the block for writing; returns at once.
  void write(const DiskEntry& entry, const uint8_t* block);
  // Reads the block with this hash into `block` if its file is valid and holds `tokens`.
  bool read(uint64_t hash, std::span<const int32_t> tokens, uint8_t* block);
  // The entry of a block file that is not in this process's index - written by another process
  // sharing the folder, after this one scanned it - if its header is valid and holds `tokens`
  // (its payload is checked when read). A file that does not qualify is left alone: it may be
  // another identity's or another writer's.
  std::optional<DiskEntry> probe(uint64_t hash, std::span<const int32_t> tokens);
  void remove(uint64_t hash);
  void flush();  // waits until every queued write is on disk

  uint64_t bytes() const;
  uint64_t max_bytes() const { return max_bytes_; }
  size_t block_bytes() const { return block_bytes_; }
  const std::string& dir() const { return dir_; }
  DiskTierStats stats() const;

 private:
  struct Job {
    DiskEntry entry;
    std::shared_ptr<std::vector<uint8_t>> data;
  };
  std::string path_of(uint64_t hash) const;
  // A file's first bytes, enough for any header (the payload follows it).
  static std::vector<uint8_t> read_head(const std::string& path);
  void writer_loop();
  bool write_file(const Job& job);
  // Byte accounting; callers hold mu_.
  void set_size(uint64_t hash, uint64_t size);
  bool drop_size(uint64_t hash);
  void drop_pending(uint64_t hash);
  bool parse(std::span<const uint8_t> head, uint64_t file_size, DiskEntry& entry,
             size_t& payload_at) const;

  std::string dir_, identity_;
  size_t block_bytes_;
  uint64_t max_bytes_;

  mutable std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<Job> queue_;
  std::map<uint64_t, std::shared_ptr<std::vector<uint8_t>>> pending_;  // queued, readable
  std::map<uint64_t, uint64_t> sizes_;                                 // files on disk
  uint64_t file_bytes_ = 0, pending_bytes_ = 0;                        // their sums
  bool busy_ = false, stop_ = false;
  DiskTierStats stats_;
  std::thread writer_;
};

// The one least-recently-used trim of every disk tier the cache keeps (blocks, and each layer
// kind's): while `disk` is over its budget, the entry used longest ago of those `candidates()`
// lists (the entries held only on disk, each as {last use, entry}; the first listed among
// equals) is dropped with its file by `drop(entry)`. Stops when none is left.
template <class Candidates, class Drop>
void trim_lru(DiskTier& disk, Candidates&& candidates, Drop&& drop) {
  while (disk.bytes() > disk.max_bytes()) {
    const auto all = candidates();
    if (all.empty()) return;
    auto oldest = all.begin();
    for (auto it = all.begin(); it != all.end(); ++it)
      if (it->first < oldest->first) oldest = it;
    drop(oldest->second);
  }
}

}  // namespace hearth
