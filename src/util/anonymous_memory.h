// A private anonymous mapping, given back to the system whole on destruction. Pages are backed
// on first touch, 2 MiB aligned and advised for transparent huge pages (a no-op where the kernel
// has them off): one TLB entry and one page fault per 2 MiB instead of per 4 KiB. Two kinds:
// - accounted: counted against the kernel's overcommit limit when mapped, as malloc is; for data
//   streamed in full every step (the repacked weights) or copied whole (the recurrent-state
//   slots).
// - lazy: address space only (MAP_NORESERVE), for a pool whose blocks are used on demand (the
//   KV pool, which may be reserved far beyond what a session fills). Attention reads a head's
//   rows from every block of a layer, blocks a whole layer stack apart, so on 4 KiB pages each
//   row range was a TLB miss (a nested page walk in a VM); on huge pages, Qwen3-0.6B Q4_0, Zen 5,
//   3 alternated runs: tg64 at depth 2048 +6-7%, tg128 from empty +5%, pp512 unchanged.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hearth {

class AnonymousMemory {
 public:
  AnonymousMemory() = default;
  // Both throw Error (naming `what`) when the mapping cannot be made; 0 bytes maps nothing.
  static AnonymousMemory accounted(size_t bytes, const char* what);
  static AnonymousMemory lazy(size_t bytes, const char* what);
  ~AnonymousMemory();
  AnonymousMemory(AnonymousMemory&& o) noexcept;
  AnonymousMemory& operator=(AnonymousMemory&& o) noexcept;
  AnonymousMemory(const AnonymousMemory&) = delete;
  AnonymousMemory& operator=(const AnonymousMemory&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  AnonymousMemory(size_t bytes, bool accounted, const char* what);
  void release();
  void* map_ = nullptr;  // the whole mapping (data_ may start later, at a 2 MiB boundary)
  size_t map_bytes_ = 0;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace hearth
