#include "util/anonymous_memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "util/error.h"

namespace hearth {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}

AnonymousMemory AnonymousMemory::accounted(size_t bytes, const char* what) {
  return AnonymousMemory(bytes, true, what);
}

AnonymousMemory AnonymousMemory::lazy(size_t bytes, const char* what) {
  return AnonymousMemory(bytes, false, what);
}

AnonymousMemory::AnonymousMemory(size_t bytes, bool accounted, const char* what) {
  if (bytes == 0) return;
  // Over-reserve by one huge page so that a 2 MiB boundary can start the data; the unused
  // head and tail are never touched, so they cost address space only.
  if (bytes > SIZE_MAX - kHugePage) fail("{}: cannot map {} bytes", what, bytes);
  map_bytes_ = bytes + kHugePage;
  void* p = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (accounted ? 0 : MAP_NORESERVE), -1, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    map_bytes_ = 0;
    fail("{}: cannot map {} bytes: {}", what, bytes, std::strerror(e));
  }
  map_ = p;
  auto addr = reinterpret_cast<uintptr_t>(p);
  addr = (addr + kHugePage - 1) / kHugePage * kHugePage;
  (void)::madvise(reinterpret_cast<void*>(addr), bytes, MADV_HUGEPAGE);  // advice only
  data_ = reinterpret_cast<uint8_t*>(addr);
  size_ = bytes;
}

AnonymousMemory::~AnonymousMemory() {
  release();
}

AnonymousMemory::AnonymousMemory(AnonymousMemory&& o) noexcept
    : map_(std::exchange(o.map_, nullptr)),
      map_bytes_(std::exchange(o.map_bytes_, 0)),
      data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)) {}

AnonymousMemory& AnonymousMemory::operator=(AnonymousMemory&& o) noexcept {
  if (this != &o) {
    release();
    map_ = std::exchange(o.map_, nullptr);
    map_bytes_ = std::exchange(o.map_bytes_, 0);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void AnonymousMemory::release() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  map_ = nullptr;
  data_ = nullptr;
  map_bytes_ = size_ = 0;
}

}  // namespace hearth
