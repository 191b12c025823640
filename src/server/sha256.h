// SHA-256 (FIPS 180-4), incremental, for verifying downloads.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hearth::server {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  std::string hex_digest();  // finishes; the object is then spent

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string sha256_hex(std::string_view data);
// SHA-256 of a file's contents; throws hearth::Error when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace hearth::server
