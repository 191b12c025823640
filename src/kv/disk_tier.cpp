#include "kv/disk_tier.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cstring>
#include <filesystem>

#include "util/error.h"
#include "util/log.h"
#include "util/regular_file.h"

namespace hearth {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'H', 'R', 'T', 'H', 'K', 'V', 'B', '1'};

void put(std::vector<uint8_t>& out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}
template <class T>
void put(std::vector<uint8_t>& out, T v) {
  put(out, &v, sizeof v);
}

// Bounds-checked reading of a file image.
struct Reader {
  const uint8_t* b;
  size_t size;
  size_t at = 0;
  bool ok = true;
  bool get(void* p, size_t n) {
    if (!ok || n > size - at) return ok = false;
    std::memcpy(p, b + at, n);
    at += n;
    return true;
  }
  template <class T>
  T get() {
    T v{};
    get(&v, sizeof v);
    return v;
  }
};

}  // namespace

uint64_t chain_hash(uint64_t parent, std::span<const int32_t> tokens) {
  return XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(), parent);
}

std::string file_content_hash(std::span<const uint8_t> bytes) {
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

DiskTier::DiskTier(std::string dir, std::string identity, size_t block_bytes, uint64_t max_bytes)
    : dir_((fs::path(dir) / identity).string()),
      identity_(std::move(identity)),
      block_bytes_(block_bytes),
      max_bytes_(max_bytes) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) fail("cache dir {}: {}", dir_, ec.message());
  writer_ = std::thread([this] { writer_loop(); });
}

DiskTier::~DiskTier() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

std::string DiskTier::path_of(uint64_t hash) const {
  return (fs::path(dir_) / fmt::format("{:016x}.kvb", hash)).string();
}

bool DiskTier::parse(std::span<const uint8_t> head, uint64_t file_size, DiskEntry& e,
                     size_t& payload_at) const {
  Reader r{head.data(), head.size()};
  char magic[8];
  if (!r.get(magic, 8) || std::memcmp(magic, kMagic, 8) != 0) return false;
  const auto id_len = r.get<uint32_t>();
  if (!r.ok || id_len != identity_.size()) return false;
  std::string id(id_len, '\0');
  if (!r.get(id.data(), id_len) || id != identity_) return false;  // foreign
  e.hash = r.get<uint64_t>();
  e.parent = r.get<uint64_t>();
  const auto n_tokens = r.get<uint32_t>();
  e.has_text = r.get<uint32_t>() != 0;
  const auto text_len = r.get<uint32_t>();
  const auto payload_len = r.get<uint64_t>();
  if (!r.ok || n_tokens == 0 || n_tokens > 1u << 16 || payload_len != block_bytes_) return false;
  e.tokens.resize(n_tokens);
  if (!r.get(e.tokens.data(), n_tokens * sizeof(int32_t))) return false;
  e.ends.clear();
  e.text.clear();
  if (e.has_text) {
    if (text_len > head.size()) return false;
    e.ends.resize(n_tokens);
    e.text.resize(text_len);
    if (!r.get(e.ends.data(), n_tokens * sizeof(uint32_t)) || !r.get(e.text.data(), text_len))
      return false;
    uint32_t prev = 0;
    for (uint32_t end : e.ends) {
      if (end < prev || end > text_len) return false;
      prev = end;
    }
    if (prev != text_len) return false;
  }
  const size_t header_end = r.at;
  const auto header_sum = r.get<uint64_t>();
  if (!r.ok || header_sum != XXH3_64bits(head.data(), header_end)) return false;
  if (e.hash != chain_hash(e.parent, e.tokens)) return false;
  payload_at = r.at;
  return file_size == payload_at + payload_len + sizeof(uint64_t);
}

std::vector<DiskEntry> DiskTier::scan() {
  std::vector<DiskEntry> out;
  std::error_code ec;
  for (const auto& de : fs::directory_iterator(dir_, ec)) {
    const fs::path p = de.path();
    if (!de.is_regular_file(ec)) {  // a FIFO or device would block a read: not ours, left alone
      if (!de.is_directory(ec)) log::warn("{}: not a regular file; ignored", p.string());
      continue;
    }
    if (p.extension() != ".kvb") {  // leftovers of interrupted writes
      fs::remove(p, ec);
      continue;
    }
    // Headers only: the payload checksum is verified when the block is read.
    const std::vector<uint8_t> head = read_head(p.string());
    const uint64_t size = de.file_size(ec);
    DiskEntry e;
    size_t payload_at = 0;
    const bool ok = !ec && parse(head, size, e, payload_at);
    if (ok && fmt::format("{:016x}.kvb", e.hash) == p.filename().string()) {
      std::lock_guard lock(mu_);
      set_size(e.hash, size);
      out.push_back(std::move(e));
    } else {
      fs::remove(p, ec);
      std::lock_guard lock(mu_);
      ++stats_.rejected;
    }
  }
  return out;
}

std::vector<uint8_t> DiskTier::read_head(const std::string& path) {
  return read_regular_file(path, 64 << 10).value_or(std::vector<uint8_t>{});
}

std::optional<DiskEntry> DiskTier::probe(uint64_t hash, std::span<const int32_t> tokens) {
  {
    std::lock_guard lock(mu_);
    if (pending_.count(hash) || sizes_.count(hash)) return std::nullopt;  // known: in the tree
  }
  const std::string path = path_of(hash);
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) return std::nullopt;
  DiskEntry e;
  size_t payload_at = 0;
  if (!parse(read_head(path), size, e, payload_at) || e.hash != hash ||
      !std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin(), tokens.end()))
    return std::nullopt;
  std::lock_guard lock(mu_);
  set_size(hash, size);  // counted from now on, like the files this process found at start
  return e;
}

void DiskTier::write(const DiskEntry& entry, const uint8_t* block) {
  auto data = std::make_shared<std::vector<uint8_t>>(block, block + block_bytes_);
  {
    std::lock_guard lock(mu_);
    drop_pending(entry.hash);
    pending_bytes_ += data->size();
    pending_[entry.hash] = data;
    queue_.push_back({entry, std::move(data)});
  }
  cv_.notify_one();
}

bool DiskTier::write_file(const Job& job) {
  const DiskEntry& e = job.entry;
  std::vector<uint8_t> out;
  out.reserve(256 + e.tokens.size() * 8 + e.text.size() + block_bytes_);
  put(out, kMagic, 8);
  put(out, static_cast<uint32_t>(identity_.size()));
  put(out, identity_.data(), identity_.size());
  put(out, e.hash);
  put(out, e.parent);
  put(out, static_cast<uint32_t>(e.tokens.size()));
  put(out, static_cast<uint32_t>(e.has_text ? 1 : 0));
  put(out, static_cast<uint32_t>(e.has_text ? e.text.size() : 0));
  put(out, static_cast<uint64_t>(block_bytes_));
  put(out, e.tokens.data(), e.tokens.size() * sizeof(int32_t));
  if (e.has_text) {
    put(out, e.ends.data(), e.ends.size() * sizeof(uint32_t));
    put(out, e.text.data(), e.text.size());
  }
  put(out, XXH3_64bits(out.data(), out.size()));
  put(out, job.data->data(), job.data->size());
  put(out, XXH3_64bits(job.data->data(), job.data->size()));

  const std::string path = path_of(e.hash);
  const std::string tmp = path + ".tmp";
  // O_NONBLOCK: a FIFO in the way fails the write at once instead of waiting for a reader.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::write(fd, out.data() + done, out.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool ok = done == out.size() && ::close(fd) == 0;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return false;
  }
  std::lock_guard lock(mu_);
  set_size(e.hash, out.size());
  ++stats_.writes;
  stats_.bytes_written += static_cast<int64_t>(out.size());
  return true;
}

void DiskTier::writer_loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      job = std::move(queue_.front());
      queue_.pop_front();
      auto it = pending_.find(job.entry.hash);
      if (it == pending_.end() || it->second != job.data) continue;  // removed or superseded
      busy_ = true;
    }
    if (!write_file(job)) log::warn("cache: cannot write {}", path_of(job.entry.hash));
    {
      std::lock_guard lock(mu_);
      auto it = pending_.find(job.entry.hash);
      if (it != pending_.end() && it->second == job.data) {
        drop_pending(job.entry.hash);
      } else if (it == pending_.end()) {  // removed while being written
        std::error_code ec;
        fs::remove(path_of(job.entry.hash), ec);
        drop_size(job.entry.hash);
      }
      busy_ = false;
    }
    idle_cv_.notify_all();
  }
}

bool DiskTier::read(uint64_t hash, std::span<const int32_t> tokens, uint8_t* block) {
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(hash);
    if (it != pending_.end()) {
      std::memcpy(block, it->second->data(), block_bytes_);
      ++stats_.reads;
      return true;
    }
  }
  const std::string path = path_of(hash);
  const size_t max_size = (64u << 10) + block_bytes_ + 8;
  std::vector<uint8_t> file;
  if (auto read = read_regular_file(path, max_size + 1); read && read->size() <= max_size)
    file = std::move(*read);
  DiskEntry e;
  size_t at = 0;
  bool ok = !file.empty() && parse(file, file.size(), e, at) && e.hash == hash &&
            std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin(), tokens.end());
  if (ok) {
    uint64_t sum = 0;
    std::memcpy(&sum, file.data() + at + block_bytes_, sizeof sum);
    ok = sum == XXH3_64bits(file.data() + at, block_bytes_);
  }
  std::lock_guard lock(mu_);
  if (!ok) {
    std::error_code ec;
    fs::remove(path, ec);
    drop_size(hash);
    ++stats_.rejected;
    return false;
  }
  std::memcpy(block, file.data() + at, block_bytes_);
  ++stats_.reads;
  stats_.bytes_read += static_cast<int64_t>(file.size());
  return true;
}

void DiskTier::remove(uint64_t hash) {
  std::lock_guard lock(mu_);
  drop_pending(hash);  // a queued write is dropped; one in progress unlinks itself
  std::error_code ec;
  fs::remove(path_of(hash), ec);
  if (drop_size(hash)) ++stats_.removed;
}

void DiskTier::flush() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

void DiskTier::set_size(uint64_t hash, uint64_t size) {
  drop_size(hash);
  sizes_[hash] = size;
  file_bytes_ += size;
}

bool DiskTier::drop_size(uint64_t hash) {
  auto it = sizes_.find(hash);
  if (it == sizes_.end()) return false;
  file_bytes_ -= it->second;
  sizes_.erase(it);
  return true;
}

void DiskTier::drop_pending(uint64_t hash) {
  auto it = pending_.find(hash);
  if (it == pending_.end()) return;
  pending_bytes_ -= it->second->size();
  pending_.erase(it);
}

uint64_t DiskTier::bytes() const {
  std::lock_guard lock(mu_);
  return file_bytes_ + pending_bytes_;
}

DiskTierStats DiskTier::stats() const {
  std::lock_guard lock(mu_);
  DiskTierStats s = stats_;
  s.files = static_cast<int64_t>(sizes_.size());
  s.bytes = static_cast<int64_t>(file_bytes_);
  return s;
}

}  // namespace hearth
