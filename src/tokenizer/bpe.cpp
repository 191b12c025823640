#include "tokenizer/bpe.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <mutex>
#include <queue>
#include <string>

#include "tokenizer/byte_level.h"
#include "tokenizer/special.h"
#include "util/error.h"
#include "util/log.h"

namespace hearth {

// ---------------------------------------------------------------------------------------------
// (left id, right id) -> (rank, merged id): open addressing, linear probing, power-of-two size.

struct BpeModel::MergeTable {
  struct Slot {
    uint64_t key = kEmpty;
    int32_t rank = 0;
    TokenId id = kNoToken;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static constexpr int32_t kHotRanks = 1 << 14;  // merges kept in the small front table

  // Open addressing, linear probing, power-of-two size.
  struct Table {
    std::vector<Slot> slots;
    uint64_t mask = 0;
    int shift = 64;

    explicit Table(size_t n) {
      size_t cap = 16;
      int bits = 4;
      while (cap < n + n / 4) {  // load factor <= 0.8
        cap <<= 1;
        ++bits;
      }
      slots.resize(cap);
      mask = cap - 1;
      shift = 64 - bits;
    }
    size_t home(uint64_t key) const {
      return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift);
    }
    bool insert(uint64_t key, int32_t rank, TokenId id) {
      for (size_t i = home(key);; i = (i + 1) & mask) {
        Slot& s = slots[i];
        if (s.key == key) return false;
        if (s.key == kEmpty) {
          s = {key, rank, id};
          return true;
        }
      }
    }
    const Slot* find(uint64_t key) const {
      for (size_t i = home(key);; i = (i + 1) & mask) {
        const Slot& s = slots[i];
        if (s.key == key) return &s;
        if (s.key == kEmpty) return nullptr;
      }
    }
  };

  // The full table is several MB (a cache miss per probe); two small, cache-resident structures
  // in front of it answer most probes: a two-bit-per-pair filter that rejects pairs without a
  // merge (about half of all probes), and a table of the most frequent (lowest-rank) merges.
  Table all;
  Table hot;
  std::vector<uint64_t> filter;
  uint64_t filter_mask = 0;

  static uint64_t key_of(TokenId l, TokenId r) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
  }
  static uint64_t mix(uint64_t x) {  // splitmix64's finalizer
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  }

  explicit MergeTable(size_t n) : all(n), hot(std::min<size_t>(n, kHotRanks)) {
    size_t bits = 1024;
    while (bits < n * 8) bits <<= 1;
    filter.assign(bits / 64, 0);
    filter_mask = bits - 1;
  }

  // Inserts unless the pair is present (the first, lowest rank, wins). Returns false if present.
  bool insert(TokenId l, TokenId r, int32_t rank, TokenId id) {
    const uint64_t key = key_of(l, r);
    if (!all.insert(key, rank, id)) return false;
    if (rank < kHotRanks) hot.insert(key, rank, id);
    const uint64_t h = mix(key);
    const uint64_t b1 = h & filter_mask, b2 = (h >> 32) & filter_mask;
    filter[b1 >> 6] |= uint64_t{1} << (b1 & 63);
    filter[b2 >> 6] |= uint64_t{1} << (b2 & 63);
    return true;
  }

  const Slot* find(TokenId l, TokenId r) const {
    const uint64_t key = key_of(l, r);
    const uint64_t h = mix(key);
    const uint64_t b1 = h & filter_mask, b2 = (h >> 32) & filter_mask;
    if (!((filter[b1 >> 6] >> (b1 & 63)) & (filter[b2 >> 6] >> (b2 & 63)) & 1)) return nullptr;
    if (const Slot* s = hot.find(key)) return s;
    return all.find(key);
  }
};

namespace {

// A fast 64-bit hash of a short byte string (not DoS-resistant: the tables below are static or
// lossy, so a bad key only costs time, never correctness).
uint64_t hash_bytes(const char* p, size_t n) {
  constexpr uint64_t kMul = 0x9FB21C651E98DF25ull;
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(n) * 0xFF51AFD7ED558CCDull);
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    h = (h ^ v) * kMul;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t v = 0;
    std::memcpy(&v, p, n);
    h = (h ^ v) * kMul;
    h ^= h >> 29;
  }
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return h;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Raw bytes -> the token that encoding them gives, for the words that encode to one token:
//  - with ignore_merges, every token whose text is byte-level (a word equal to it is emitted
//    whole), so find(bytes) == vocab.find(byte_level(bytes)) exactly;
//  - otherwise, the tokens t for which merging the bytes of t gives exactly [t] (computed at
//    load), so a hit is the merge result itself, without merging.
// Keys are the raw bytes, so lookups neither build the byte-level string nor touch the
// vocabulary's node-based map.

struct BpeModel::TokenMap {
  struct Slot {
    uint32_t tag = 0;  // high half of the hash
    uint32_t offset = 0;
    uint32_t length = 0;
    TokenId id = kNoToken;
  };
  std::string arena;
  std::vector<Slot> slots;
  size_t mask = 0;
  size_t size = 0;

  // `accept(bytes, id)` decides which tokens are keys.
  template <typename Accept>
  TokenMap(const Vocab& v, Accept&& accept) {
    std::vector<std::pair<uint32_t, uint32_t>> keys;  // (offset in arena, length)
    std::vector<TokenId> ids;
    std::string decoded, reencoded;
    for (size_t i = 0; i < v.n_tokens(); ++i) {
      const auto id = static_cast<TokenId>(i);
      const std::string& text = v.text(id);
      decoded.clear();
      byte_level_decode_append(text, decoded);
      reencoded.clear();
      byte_level_encode_append(decoded, reencoded);
      if (reencoded != text) continue;  // not a byte-level text (an added token's raw text...)
      if (!accept(std::string_view(decoded), id)) continue;
      keys.emplace_back(static_cast<uint32_t>(arena.size()), static_cast<uint32_t>(decoded.size()));
      ids.push_back(id);
      arena += decoded;
    }
    size_t cap = 16;
    while (cap < keys.size() * 2) cap <<= 1;
    slots.resize(cap);
    mask = cap - 1;
    size = keys.size();
    for (size_t k = 0; k < keys.size(); ++k) {
      const uint64_t h = hash_bytes(arena.data() + keys[k].first, keys[k].second);
      size_t i = static_cast<size_t>(h) & mask;
      while (slots[i].id != kNoToken) i = (i + 1) & mask;
      slots[i] = {static_cast<uint32_t>(h >> 32), keys[k].first, keys[k].second, ids[k]};
    }
  }

  TokenId find(std::string_view bytes, uint64_t h) const {
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = static_cast<size_t>(h) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots[i];
      if (s.id == kNoToken) return kNoToken;
      if (s.tag == tag && s.length == bytes.size() &&
          std::memcmp(arena.data() + s.offset, bytes.data(), bytes.size()) == 0) {
        return s.id;
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Pre-token -> ids: a lossy direct-mapped cache of fixed 64-byte slots (a new word evicts the
// one in its slot), so it is bounded by construction and never allocates after construction.
// Words over kMaxKey bytes or results over kMaxIds tokens are not cached. Slots are guarded by
// striped mutexes (uncontended in the common single-thread case).

class BpeModel::WordCache {
 public:
  static constexpr size_t kMaxKey = 30;
  static constexpr size_t kMaxIds = 6;
  static constexpr size_t kStripes = 64;

  explicit WordCache(size_t capacity) {
    size_t cap = 64;
    while (cap < capacity) cap <<= 1;
    slots_.resize(cap);
    mask_ = cap - 1;
  }

  bool find(std::string_view word, uint64_t h, std::vector<TokenId>& out) const {
    if (word.size() > kMaxKey) return false;
    const size_t i = static_cast<size_t>(h) & mask_;
    const Slot& s = slots_[i];
    Stripe& st = stripes_[i % kStripes];
    std::lock_guard lock(st.mu);
    if (s.hash != h || s.key_len != word.size() ||
        std::memcmp(s.key, word.data(), word.size()) != 0) {
      ++st.misses;
      return false;
    }
    out.insert(out.end(), s.ids, s.ids + s.n_ids);
    ++st.hits;
    return true;
  }

  void insert(std::string_view word, uint64_t h, const TokenId* ids, size_t n) const {
    if (word.size() > kMaxKey || n > kMaxIds || word.empty()) return;
    const size_t i = static_cast<size_t>(h) & mask_;
    Slot& s = slots_[i];
    std::lock_guard lock(stripes_[i % kStripes].mu);
    s.hash = h;
    s.key_len = static_cast<uint8_t>(word.size());
    s.n_ids = static_cast<uint8_t>(n);
    std::memcpy(s.key, word.data(), word.size());
    std::memcpy(s.ids, ids, n * sizeof(TokenId));
  }

  CacheStats stats() const {
    CacheStats st;
    for (size_t i = 0; i < slots_.size(); ++i) {
      std::lock_guard lock(stripes_[i % kStripes].mu);
      if (slots_[i].key_len > 0) ++st.entries;
    }
    for (Stripe& s : stripes_) {
      std::lock_guard lock(s.mu);
      st.hits += s.hits;
      st.misses += s.misses;
    }
    return st;
  }

  void clear() const {
    for (size_t i = 0; i < slots_.size(); ++i) {
      std::lock_guard lock(stripes_[i % kStripes].mu);
      slots_[i] = Slot{};
    }
    for (Stripe& s : stripes_) {
      std::lock_guard lock(s.mu);
      s.hits = s.misses = 0;
    }
  }

  size_t capacity() const { return slots_.size(); }

 private:
  struct alignas(64) Slot {
    uint64_t hash = 0;
    uint8_t key_len = 0;  // 0: empty
    uint8_t n_ids = 0;
    char key[kMaxKey] = {};
    TokenId ids[kMaxIds] = {};
  };
  static_assert(sizeof(Slot) == 64);
  struct alignas(64) Stripe {
    std::mutex mu;
    size_t hits = 0;
    size_t misses = 0;
  };

  mutable std::vector<Slot> slots_;
  size_t mask_ = 0;
  mutable std::array<Stripe, kStripes> stripes_;
};

// ---------------------------------------------------------------------------------------------

BpeModel::BpeModel(std::shared_ptr<const Vocab> vocab, Options options)
    : vocab_(std::move(vocab)),
      options_(options),
      pre_info_(bpe_pre_info(vocab_ ? vocab_->pre() : std::string_view{})),
      pre_(pre_info_.patterns) {
  if (!vocab_) fail("BpeModel: null vocabulary");
  const Vocab& v = *vocab_;
  if (v.type() != VocabType::Bpe) {
    fail("BpeModel: tokenizer model '{}' is not byte-level BPE ('gpt2')", v.model());
  }
  if (!pre_info_.known) {
    log::warn(
        "tokenizer: unknown pre-tokenizer '{}' (tokenizer.ggml.pre); falling back to the GPT-2 "
        "regex, so tokenization may differ from the model's",
        v.pre());
  }
  const auto& merges = v.merges();
  if (merges.empty()) fail("BPE vocabulary without merges (tokenizer.ggml.merges is missing)");

  for (int b = 0; b < 256; ++b) {
    byte_ids_[b] = v.find(byte_level_char(static_cast<uint8_t>(b)));
  }

  merges_ = std::make_unique<MergeTable>(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& m = merges[rank];
    // "left right": the separator is the first space after the first character (a byte-level
    // token never contains a space, its spaces are 'Ġ').
    const size_t sep = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (sep == std::string::npos) {
      fail("tokenizer.ggml.merges[{}] = '{}' is not of the form 'left right'", rank, m);
    }
    const std::string_view left(m.data(), sep);
    const std::string_view right(m.data() + sep + 1, m.size() - sep - 1);
    joined.assign(left);
    joined.append(right);
    const TokenId l = v.find(left);
    const TokenId r = v.find(right);
    const TokenId id = v.find(joined);
    if (l == kNoToken || r == kNoToken || id == kNoToken || rank > INT32_MAX) {
      ++n_skipped_merges_;
      continue;
    }
    if (merges_->insert(l, r, static_cast<int32_t>(rank), id)) {
      ++n_merges_;
    } else {
      ++n_skipped_merges_;  // a duplicate pair: the earlier rank stands
    }
  }
  if (n_skipped_merges_ > 0) {
    log::debug("tokenizer: {} of {} merges skipped (parts or result not in the vocabulary)",
               n_skipped_merges_, merges.size());
  }
  // The first round of every word looks up byte pairs only: a dense table serves those.
  byte_pairs_.resize(256 * 256);
  for (size_t a = 0; a < 256; ++a) {
    for (size_t b = 0; b < 256; ++b) {
      const MergeTable::Slot* slot = (byte_ids_[a] == kNoToken || byte_ids_[b] == kNoToken)
                                         ? nullptr
                                         : merges_->find(byte_ids_[a], byte_ids_[b]);
      byte_pairs_[a * 256 + b] = slot ? PairMerge{slot->rank, slot->id} : PairMerge{};
    }
  }
  if (pre_info_.ignore_merges) {
    tokens_ = std::make_unique<TokenMap>(v, [](std::string_view, TokenId) { return true; });
  } else {
    std::vector<TokenId> ids;
    tokens_ = std::make_unique<TokenMap>(v, [&](std::string_view bytes, TokenId id) {
      if (bytes.size() < 2) return false;  // single bytes have their own fast path
      ids.clear();
      try {
        merge_word(bytes, ids);
      } catch (const Error&) {  // a byte without a token in a malformed vocabulary
        return false;
      }
      return ids.size() == 1 && ids[0] == id;
    });
  }
  if (options_.cache_entries > 0) cache_ = std::make_unique<WordCache>(options_.cache_entries);
}

BpeModel::~BpeModel() = default;

BpeModel::CacheStats BpeModel::cache_stats() const {
  return cache_ ? cache_->stats() : CacheStats{};
}

void BpeModel::clear_cache() const {
  if (cache_) cache_->clear();
}

void BpeModel::push_symbol(TokenId id, uint8_t byte, std::vector<TokenId>& out) const {
  if (id != kNoToken) {
    out.push_back(id);
    return;
  }
  // Only an unmerged byte can lack a token (merges only form tokens).
  if (vocab_->unk() != kNoToken) {
    out.push_back(vocab_->unk());
    return;
  }
  fail(
      "cannot tokenize byte 0x{:02X}: the vocabulary has no token for its byte-level character "
      "and no unknown token",
      byte);
}

namespace {

struct Scratch {
  std::vector<TokenId> ids;
  std::vector<int32_t> ranks;
  std::vector<TokenId> merged;
  std::vector<uint8_t> bytes;
  std::string mapped;
  // heap path
  struct Sym {
    TokenId id;
    int32_t prev;
    int32_t next;
  };
  struct Cand {
    int32_t rank;
    int32_t left;
    int32_t right;
    TokenId left_id;
    TokenId right_id;
  };
  std::vector<Sym> syms;
  std::vector<Cand> heap;
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// Min-heap order: lowest rank first, then the leftmost pair.
struct CandAfter {
  bool operator()(const Scratch::Cand& a, const Scratch::Cand& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

struct BestPair {
  size_t index = 0;
  int32_t rank = INT32_MAX;  // INT32_MAX: no pair has a merge
};

// The leftmost pair of lowest rank among the first m symbols' pairs.
inline BestPair best_pair(const Scratch& s, size_t m) {
  BestPair best;
  for (size_t i = 0; i + 1 < m; ++i) {
    if (s.ranks[i] < best.rank) best = {i, s.ranks[i]};
  }
  return best;
}

// Removes symbol i of the first m (and its pair entry), moving the later ones down.
inline void erase_symbol(Scratch& s, size_t i, size_t m) {
  const size_t tail = m - i - 1;
  std::memmove(s.ids.data() + i, s.ids.data() + i + 1, tail * sizeof(TokenId));
  std::memmove(s.bytes.data() + i, s.bytes.data() + i + 1, tail);
  std::memmove(s.ranks.data() + i, s.ranks.data() + i + 1, tail * sizeof(int32_t));
  std::memmove(s.merged.data() + i, s.merged.data() + i + 1, tail * sizeof(TokenId));
}

}  // namespace

void BpeModel::merge_word(std::string_view word, std::vector<TokenId>& out) const {
  if (word.size() < options_.heap_merge_min) {
    merge_short_word(word, out);
  } else {
    merge_long_word(word, out);
  }
}

// Short words: a rank array, ranks[i] being the rank of the pair (ids[i], ids[i + 1]), scanned
// for the best pair at each merge.
void BpeModel::merge_short_word(std::string_view word, std::vector<TokenId>& out) const {
  Scratch& s = scratch();
  const size_t n = word.size();
  const MergeTable& table = *merges_;
  s.ids.resize(n);
  s.bytes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    s.bytes[i] = static_cast<uint8_t>(word[i]);
    s.ids[i] = byte_ids_[s.bytes[i]];
  }
  s.ranks.resize(n);
  s.merged.resize(n);
  auto rank_at = [&](size_t i) {
    const TokenId l = s.ids[i];
    const TokenId r = s.ids[i + 1];
    const MergeTable::Slot* slot = (l == kNoToken || r == kNoToken) ? nullptr : table.find(l, r);
    s.ranks[i] = slot ? slot->rank : INT32_MAX;
    s.merged[i] = slot ? slot->id : kNoToken;
  };
  size_t m = n;
  for (size_t i = 0; i + 1 < m; ++i) {
    const PairMerge& pm = byte_pairs_[size_t{s.bytes[i]} * 256 + s.bytes[i + 1]];
    s.ranks[i] = pm.rank;
    s.merged[i] = pm.id;
  }
  while (m > 1) {
    const auto [best, best_rank] = best_pair(s, m);
    if (best_rank == INT32_MAX) break;
    s.ids[best] = s.merged[best];
    erase_symbol(s, best + 1, m);
    --m;
    if (best > 0) rank_at(best - 1);
    if (best + 1 < m) {
      rank_at(best);
    } else {
      s.ranks[best] = INT32_MAX;
    }
  }
  for (size_t i = 0; i < m; ++i) push_symbol(s.ids[i], s.bytes[i], out);
}

// Long words: linked list + priority queue of candidate pairs, stale entries skipped.
void BpeModel::merge_long_word(std::string_view word, std::vector<TokenId>& out) const {
  Scratch& s = scratch();
  const size_t n = word.size();
  const MergeTable& table = *merges_;
  s.syms.resize(n);
  for (size_t i = 0; i < n; ++i) {
    s.syms[i] = {byte_ids_[static_cast<uint8_t>(word[i])], static_cast<int32_t>(i) - 1,
                 i + 1 < n ? static_cast<int32_t>(i + 1) : -1};
  }
  s.heap.clear();
  auto push_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const TokenId l = s.syms[static_cast<size_t>(left)].id;
    const TokenId r = s.syms[static_cast<size_t>(right)].id;
    if (l == kNoToken || r == kNoToken) return;
    const MergeTable::Slot* slot = table.find(l, r);
    if (!slot) return;
    s.heap.push_back({slot->rank, left, right, l, r});
    std::push_heap(s.heap.begin(), s.heap.end(), CandAfter{});
  };
  for (size_t i = 0; i + 1 < n; ++i) {
    const PairMerge& pm = byte_pairs_[size_t{static_cast<uint8_t>(word[i])} * 256 +
                                      static_cast<uint8_t>(word[i + 1])];
    if (pm.id == kNoToken) continue;
    s.heap.push_back({pm.rank, static_cast<int32_t>(i), static_cast<int32_t>(i + 1), s.syms[i].id,
                      s.syms[i + 1].id});
  }
  std::make_heap(s.heap.begin(), s.heap.end(), CandAfter{});
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), CandAfter{});
    const Scratch::Cand c = s.heap.back();
    s.heap.pop_back();
    Scratch::Sym& l = s.syms[static_cast<size_t>(c.left)];
    if (l.id != c.left_id || l.next != c.right) continue;  // stale
    Scratch::Sym& r = s.syms[static_cast<size_t>(c.right)];
    if (r.id != c.right_id) continue;
    const MergeTable::Slot* slot = table.find(c.left_id, c.right_id);
    l.id = slot->id;  // (the pair was found when queued; the table is immutable)
    l.next = r.next;
    if (r.next >= 0) s.syms[static_cast<size_t>(r.next)].prev = c.left;
    r.id = kNoToken;
    r.prev = r.next = -1;
    push_pair(l.prev, c.left);
    push_pair(c.left, l.next);
  }
  for (int32_t i = 0; i >= 0; i = s.syms[static_cast<size_t>(i)].next) {
    push_symbol(s.syms[static_cast<size_t>(i)].id,
                static_cast<uint8_t>(word[static_cast<size_t>(i)]), out);
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<TokenId>& out) const {
  if (word.empty()) return;
  if (word.size() == 1) {
    push_symbol(byte_ids_[static_cast<uint8_t>(word[0])], static_cast<uint8_t>(word[0]), out);
    return;
  }
  const uint64_t h = hash_bytes(word.data(), word.size());
  if (tokens_) {  // a word that is a token (and that merging gives whole, see TokenMap)
    if (const TokenId id = tokens_->find(word, h); id != kNoToken) {
      out.push_back(id);
      return;
    }
  }
  if (cache_ && cache_->find(word, h, out)) return;
  const size_t before = out.size();
  merge_word(word, out);
  if (cache_) cache_->insert(word, h, out.data() + before, out.size() - before);
}

void BpeModel::encode_fragment(std::string_view text, std::vector<TokenId>& out) const {
  pre_.for_each_piece(
      text, [&](size_t offset, size_t length) { encode_word(text.substr(offset, length), out); });
}

std::vector<TokenId> BpeModel::tokenize(std::string_view text, bool add_special, bool parse_special,
                                        const ByteRanges* control_ranges) const {
  const Vocab& v = *vocab_;
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && v.add_bos()) out.push_back(v.bos());
  for (const Fragment& f : split_special_tokens(v, text, parse_special, control_ranges)) {
    if (f.is_token()) {
      out.push_back(f.token);
    } else {
      encode_fragment(text.substr(f.offset, f.length), out);
    }
  }
  if (add_special && v.add_eos()) out.push_back(v.eos());
  return out;
}

}  // namespace hearth
