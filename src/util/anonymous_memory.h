// A private anonymous mapping, given back to the system whole on destruction. Pages are backed
// on first touch. Two kinds:
// - huge_pages: 2 MiB aligned and advised for transparent huge pages (a no-op where the kernel
//   has them off), for data streamed in full every step (the repacked weights) or copied whole
//   (the recurrent-state slots, megabytes each): one TLB entry and one page fault per 2 MiB
//   instead of per 4 KiB. The kernel's overcommit check applies, as for malloc.
// - lazy: address space only (MAP_NORESERVE), for a pool whose blocks are used on demand (the
//   KV pool); 4 KiB pages, so that first use never stalls on huge-page compaction.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hearth {

class AnonymousMemory {
 public:
  AnonymousMemory() = default;
  // Both throw Error (naming `what`) when the mapping cannot be made; 0 bytes maps nothing.
  static AnonymousMemory huge_pages(size_t bytes, const char* what);
  static AnonymousMemory lazy(size_t bytes, const char* what);
  ~AnonymousMemory();
  AnonymousMemory(AnonymousMemory&& o) noexcept;
  AnonymousMemory& operator=(AnonymousMemory&& o) noexcept;
  AnonymousMemory(const AnonymousMemory&) = delete;
  AnonymousMemory& operator=(const AnonymousMemory&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  AnonymousMemory(size_t bytes, bool huge, const char* what);
  void release();
  void* map_ = nullptr;  // the whole mapping (data_ may start later, at a 2 MiB boundary)
  size_t map_bytes_ = 0;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hearth
