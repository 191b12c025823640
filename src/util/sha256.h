// SHA-256 through OpenSSL's libcrypto (already a dependency of the HTTP library), for verifying
// downloads and test data.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace hearth {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  std::string hex_digest();  // finishes; the object is then spent

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

std::string sha256_hex(std::string_view data);
// SHA-256 of a file's contents; throws hearth::Error when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace hearth
