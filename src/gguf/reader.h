// GGUF v2/v3 reader over a memory-mapped file. Every field is bounds-checked: a truncated,
// corrupted or hostile file gets an Error naming the file and the problem, never a crash,
// a hang, or an allocation larger than the file justifies.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gguf/value.h"
#include "quant/types.h"
#include "util/mapped_file.h"

namespace hearth::gguf {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint32_t kDefaultAlignment = 32;
constexpr int kMaxDims = 4;
constexpr int kMaxArrayDepth = 8;  // arrays of arrays nest at most this deep
constexpr uint32_t kMaxAlignment = 1u << 16;

struct TensorInfo {
  std::string name;
  int n_dims = 0;
  std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};  // ne[0] is the contiguous (row) dimension
  TensorType type = TensorType::F32;
  uint64_t offset = 0;  // relative to the start of the data section
  uint64_t nbytes = 0;
  const uint8_t* data = nullptr;  // into the mapping, or into the caller's buffer for parse()

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  std::string shape_string() const;
};

struct KeyValue {
  std::string key;
  Value value;
};

class File {
 public:
  // Maps and parses `path`.
  static File open(const std::string& path);
  // Parses an in-memory image (for tests and fuzzing); `name` is used in error messages.
  // The bytes must outlive the File if tensor data pointers are used.
  //
  // Validation (every failure throws Error "<name>: <problem>", naming the key or tensor and
  // the file offset where it applies):
  //  - magic "GGUF", version 2 or 3 (1, others and byte-swapped big-endian files rejected);
  //  - counts, string lengths and array counts must fit in the bytes that remain (each KV needs
  //    >= 13 bytes, each tensor info >= 32, each array element its minimal encoded size), so
  //    nothing is reserved beyond what the file can hold; arrays nest at most kMaxArrayDepth;
  //  - keys and tensor names non-empty and unique; value and element types known; BOOL bytes
  //    0 or 1;
  //  - general.alignment, when present, must be a u32 power of two in 1..kMaxAlignment (other
  //    integer types are rejected, as the spec and llama.cpp require u32);
  //  - tensors: 1..4 dims, every ne >= 0 (0 = empty tensor), element count and byte size must
  //    not overflow, ne[0] a multiple of the type's block size, known type id, offset a multiple
  //    of the alignment, data inside the file, and no two non-empty tensors overlapping.
  // A file without tensors may end right after its header (data_offset() can then be past
  // the end of the file).
  static File parse(const uint8_t* bytes, size_t size, const std::string& name);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // absolute file offset of tensor data
  size_t file_size() const { return size_; }
  // The whole file's bytes (valid while the File, or parse()'s buffer, lives).
  std::span<const uint8_t> bytes() const { return {base_, size_}; }
  const std::string& name() const { return name_; }
  // True when the bytes are a mapping of the file (open()), false for parse()'s buffer.
  bool mapped() const { return map_ != nullptr; }

  const std::vector<KeyValue>& metadata() const { return kvs_; }
  const Value* find(const std::string& key) const;
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(const std::string& name) const;

  // Typed lookups: nullopt when absent; an Error naming the key when present with a wrong type.
  // get_int: any integer or bool (a u64 above INT64_MAX is an Error); get_float: float or
  // integer; get_bool: bool or integer (non-zero = true); get_string: string only;
  // get_array: array only (nullptr when absent).
  std::optional<int64_t> get_int(const std::string& key) const;
  std::optional<double> get_float(const std::string& key) const;
  std::optional<bool> get_bool(const std::string& key) const;
  std::optional<std::string> get_string(const std::string& key) const;
  const Value* get_array(const std::string& key) const;

 private:
  std::shared_ptr<MappedFile> map_;  // keeps tensor data alive; null for parse()
  std::string name_;
  size_t size_ = 0;
  const uint8_t* base_ = nullptr;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> kvs_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;

  friend class Parser;
};

}  // namespace hearth::gguf
