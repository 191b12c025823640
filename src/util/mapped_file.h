// A read-only memory mapping of a whole file; weights are read straight from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hearth {

class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::string& path);  // throws Error naming the path
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Drops the whole pages inside [p, p + n) from this process's resident set (they are read
  // back from the page cache if touched again): for data that has been copied elsewhere.
  static void drop_pages(const void* p, size_t n);

 private:
  void release();
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hearth
