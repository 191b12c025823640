// A private anonymous mapping: memory committed page by page on first touch, returned to the
// system whole on destruction. With `huge_pages`, the region is 2 MiB aligned and advised for
// transparent huge pages (a no-op where the kernel has them off): data streamed in full every
// step (the repacked weights) then costs one TLB entry per 2 MiB instead of per 4 KiB.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hearth {

class AnonymousMemory {
 public:
  AnonymousMemory() = default;
  // Throws Error (naming `what`) when the address space cannot be reserved.
  AnonymousMemory(size_t bytes, bool huge_pages, const char* what);
  ~AnonymousMemory();
  AnonymousMemory(AnonymousMemory&& o) noexcept;
  AnonymousMemory& operator=(AnonymousMemory&& o) noexcept;
  AnonymousMemory(const AnonymousMemory&) = delete;
  AnonymousMemory& operator=(const AnonymousMemory&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release();
  void* map_ = nullptr;  // the whole mapping (data_ may start later, at a 2 MiB boundary)
  size_t map_bytes_ = 0;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hearth
