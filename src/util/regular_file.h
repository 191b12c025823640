// Reading files that hearth finds rather than is given (its cache folder's contents) or that a
// user names: only regular files, opened without blocking. open() on a FIFO waits for a writer
// and a read from a device may never end, so either would hang a start-up scan forever.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hearth {

// A read-only descriptor for `path` when it is a regular file (after symlinks), else -1 with
// errno set (EINVAL for a FIFO, device, socket or directory). The caller closes it.
int open_regular_file(const std::string& path);

// Up to `max_bytes` from the start of the regular file at `path`; nullopt when it is not one or
// cannot be read.
std::optional<std::vector<uint8_t>> read_regular_file(const std::string& path, size_t max_bytes);

}  // namespace hearth
