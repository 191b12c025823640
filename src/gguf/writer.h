// GGUF v3 writer: metadata in insertion order, then tensor infos, the header padded to the
// alignment, then each tensor's data padded to the alignment (llama.cpp's layout). Everything is
// validated when added, so write() fails only on I/O (or a throwing fill callback), and what it
// writes is accepted by File::parse.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/value.h"
#include "quant/types.h"

namespace hearth::gguf {

class Writer {
 public:
  // Fills exactly `nbytes` bytes at `dst` (zeroed beforehand) with a tensor's data. Called once
  // per write()/to_bytes(), when that tensor's turn comes.
  using Fill = std::function<void(uint8_t* dst, size_t nbytes)>;

  // Longest tensor name written (llama.cpp keeps names in a 64-byte buffer with its NUL).
  static constexpr size_t kMaxTensorName = 63;

  // Adds `key` at the end, or replaces its value in place when it exists. Throws Error for an
  // empty key or a value that cannot be encoded (unknown type, integer out of its type's range,
  // arrays nested deeper than kMaxArrayDepth, an array-of-arrays element that is no array).
  // "general.alignment" must be a u32 power of two in 1..kMaxAlignment and sets the alignment.
  void set(const std::string& key, Value value);
  bool remove(const std::string& key);  // false when absent
  const Value* find(const std::string& key) const;
  const std::vector<KeyValue>& metadata() const { return kvs_; }

  // Sets "general.alignment" (u32) and lays tensors out on that boundary (default 32).
  void set_alignment(uint32_t alignment);
  uint32_t alignment() const { return alignment_; }

  // Adds a tensor; `ne` has 1..4 dims, ne[0] first (the contiguous one). Throws Error for an
  // empty, over-long or duplicate name, a bad shape (negative dim, ne[0] not a multiple of the
  // type's block size, overflow) or `bytes.size()` != row_bytes(type, ne[0]) * rows.
  void add_tensor(const std::string& name, TensorType type, std::vector<int64_t> ne,
                  std::vector<uint8_t> bytes);
  // Lazy form: the bytes are produced by `fill` at write time, so a large model can be written
  // holding one tensor at a time in memory.
  void add_tensor(const std::string& name, TensorType type, std::vector<int64_t> ne, Fill fill);
  size_t tensor_count() const { return tensors_.size(); }

  // Exact size of the image write() / to_bytes() produce.
  uint64_t file_size() const;

  // Writes a v3 file to `path` + ".tmp", syncs it, then renames it over `path`. On failure
  // throws Error "<path>: <problem>" and leaves no temporary file behind; `path` is untouched.
  void write(const std::string& path) const;
  // The same image in memory (for tests).
  std::vector<uint8_t> to_bytes() const;

 private:
  struct Pending {
    std::string name;
    TensorType type = TensorType::F32;
    std::vector<int64_t> ne;
    uint64_t nbytes = 0;
    std::vector<uint8_t> bytes;  // eager data, or empty with `fill` set
    Fill fill;
  };

  uint64_t check_tensor(const std::string& name, TensorType type,
                        const std::vector<int64_t>& ne) const;
  // Header (padded to the alignment) and each tensor's offset.
  std::vector<uint8_t> header(std::vector<uint64_t>* offsets, uint64_t* total) const;

  std::vector<KeyValue> kvs_;
  std::vector<Pending> tensors_;
  uint32_t alignment_ = kDefaultAlignment;
};

}  // namespace hearth::gguf
