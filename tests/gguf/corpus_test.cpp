// Robustness corpus: real and writer-made files, truncated at (nearly) every header offset and
// mutated thousands of times (seeded). Parsing must either succeed or throw hearth::Error whose
// message starts with the file name: no other exception, no crash (run under ASan/UBSan too),
// and no single allocation out of proportion to the input.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "common/shared_data.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "gguf_test_util.h"
#include "util/error.h"

// Records the largest single allocation made while enabled (replaces the global operator new of
// this test binary; all other forms of new forward to it in libstdc++).
namespace {
std::atomic<bool> g_track{false};
std::atomic<size_t> g_largest{0};
}  // namespace

// GCC flags free() on memory from operator new even inside a replacement pair that uses
// malloc/free on purpose.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(size_t n) {
  if (g_track.load(std::memory_order_relaxed)) {
    size_t cur = g_largest.load(std::memory_order_relaxed);
    while (n > cur && !g_largest.compare_exchange_weak(cur, n)) {
    }
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}

namespace hearth::gguf {
namespace {

using test::Bytes;
using test::read_bytes;

// Memory the parser may take per byte of input (Value and KeyValue records are ~15x the size of
// the smallest encodings they are decoded from), plus a constant.
constexpr size_t kMaxAllocPerByte = 16;
constexpr size_t kAllocSlack = 1 << 16;

struct Outcome {
  bool ok = false;
  std::string error;
};

// Reads every byte a successful parse points at, so ASan sees any out-of-bounds pointer.
uint64_t touch(const File& f) {
  uint64_t h = 0;
  for (const KeyValue& kv : f.metadata()) h += kv.value.to_display(4).size();
  for (const TensorInfo& t : f.tensors()) {
    h += t.shape_string().size() + static_cast<uint64_t>(t.n_elements() & 1);
    if (t.nbytes > 0) h += t.data[0] + t.data[t.nbytes - 1];
  }
  return h;
}

// Parses and checks the contract; returns what happened.
Outcome check_parse(const uint8_t* data, size_t size, const std::string& name) {
  Outcome out;
  g_largest = 0;
  g_track = true;
  try {
    const File f = File::parse(data, size, name);
    g_track = false;
    (void)touch(f);
    out.ok = true;
  } catch (const Error& e) {
    g_track = false;
    out.error = e.what();
    EXPECT_EQ(out.error.rfind(name + ": ", 0), 0u) << "message lacks the file name: " << out.error;
  } catch (const std::exception& e) {
    g_track = false;
    ADD_FAILURE() << name << ": unexpected exception type: " << e.what();
  } catch (...) {
    g_track = false;
    ADD_FAILURE() << name << ": unexpected non-std exception";
  }
  EXPECT_LE(g_largest.load(), size * kMaxAllocPerByte + kAllocSlack)
      << name << ": allocation of " << g_largest.load() << " bytes for a " << size << "-byte input";
  return out;
}

struct CorpusFile {
  std::string name;
  Bytes bytes;
};

// Writer-made images plus a few real ones when ../shared is present.
std::vector<CorpusFile> corpus(bool include_big) {
  std::vector<CorpusFile> out;
  out.push_back({"sample.gguf", test::sample_writer().to_bytes()});
  Writer aligned = test::sample_writer();
  aligned.set_alignment(64);
  out.push_back({"aligned.gguf", aligned.to_bytes()});
  Bytes v2 = test::sample_writer().to_bytes();
  v2[4] = 2;
  out.push_back({"v2.gguf", v2});
  const char* real[] = {"models/stories260K.gguf", "models/synthetic/qwen3-Q4_K.gguf",
                        "models/synthetic/qwen2-Q8_0.gguf"};
  for (const char* rel : real)
    if (::hearth::test::shared_exists(rel))
      out.push_back({std::filesystem::path(rel).filename().string(),
                     read_bytes(::hearth::test::shared_path(rel))});
  if (include_big && ::hearth::test::shared_exists("tokenizers/ggml-vocab-bert-bge.gguf"))
    out.push_back({"ggml-vocab-bert-bge.gguf",
                   read_bytes(::hearth::test::shared_path("tokenizers/ggml-vocab-bert-bge.gguf"))});
  return out;
}

TEST(Corpus, TruncationAtEveryHeaderOffset) {
  size_t parses = 0;
  for (const CorpusFile& c : corpus(true)) {
    SCOPED_TRACE(c.name);
    const test::Fields fields = test::FieldWalker(c.bytes).walk();
    ASSERT_TRUE(check_parse(c.bytes.data(), c.bytes.size(), c.name).ok);
    // Writer-made files: every offset of the whole file. Real files: every offset of the first
    // 2 KiB, then cuts spread over the header (fewer where a parse is expensive), then a few in
    // the data.
    const bool small = c.bytes.size() < 4096;
    const size_t n_spread = fields.header_end < 100'000 ? 1000 : 150;
    const size_t stride = small ? 1 : std::max<size_t>(1, fields.header_end / n_spread);
    std::vector<size_t> cuts;
    for (size_t k = 0; k < c.bytes.size(); k += (small || k < 2048) ? 1 : stride) {
      if (!small && k > fields.header_end + 64) break;
      cuts.push_back(k);
    }
    for (size_t k = 1; k <= 8; ++k) cuts.push_back(c.bytes.size() - k * c.bytes.size() / 16);
    // Copies, so that ASan flags any read past the cut.
    for (size_t cut : cuts) {
      const Bytes prefix(c.bytes.begin(), c.bytes.begin() + static_cast<std::ptrdiff_t>(cut));
      const Outcome o = check_parse(prefix.data(), prefix.size(), c.name);
      ++parses;
      if (cut < fields.header_end) {
        EXPECT_FALSE(o.ok) << "a prefix of " << cut << " bytes parsed";
        if (cut >= 8 && !o.ok) {
          EXPECT_TRUE(o.error.find("truncated") != std::string::npos ||
                      o.error.find(" claims ") != std::string::npos)
              << "cut at " << cut << ": " << o.error;
        }
      }
    }
  }
  std::cout << "[ corpus   ] " << parses << " truncated parses\n";
}

// One random change: a bit flip, a special byte, or an overwrite of a count/length/type field.
// Returns the end of the changed bytes.
size_t mutate(Bytes& b, const test::Fields& f, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  // Mostly inside the header, where the parser looks; sometimes anywhere.
  const size_t span = (pick(10) == 0) ? b.size() : std::min(b.size(), f.header_end + 64);
  switch (pick(6)) {
    case 0: {
      const size_t at = pick(span);
      b[at] ^= static_cast<uint8_t>(1u << pick(8));
      return at + 1;
    }
    case 1: {
      static constexpr uint8_t kSpecial[] = {0x00, 0xFF, 0x7F, 0x80, 0x01, 0x20};
      const size_t at = pick(span);
      b[at] = kSpecial[pick(sizeof kSpecial)];
      return at + 1;
    }
    case 2:
    case 3: {
      if (f.u64s.empty()) return 0;
      const size_t at = f.u64s[pick(f.u64s.size())];
      uint64_t old;
      std::memcpy(&old, b.data() + at, 8);
      const uint64_t kValues[] = {0,
                                  1,
                                  2,
                                  old + 1,
                                  old - 1,
                                  old * 2,
                                  old + 32,
                                  b.size(),
                                  b.size() - at,
                                  uint64_t{1} << 32,
                                  uint64_t{1} << 63,
                                  ~uint64_t{0},
                                  ~uint64_t{0} - 7,
                                  uint64_t{0x7FFFFFFFFFFFFFFF},
                                  rng(),
                                  rng() % 4096};
      const uint64_t v = kValues[pick(std::size(kValues))];
      std::memcpy(b.data() + at, &v, 8);
      return at + 8;
    }
    case 4: {
      if (f.u32s.empty()) return 0;
      const size_t at = f.u32s[pick(f.u32s.size())];
      const uint32_t kValues[] = {
          0, 1, 4, 5, 7, 8, 9, 12, 13, 31, 36, 0xFFFFFFFF, static_cast<uint32_t>(rng())};
      const uint32_t v = kValues[pick(std::size(kValues))];
      std::memcpy(b.data() + at, &v, 4);
      return at + 4;
    }
    default: {  // a random run of random bytes
      const size_t at = pick(span);
      const size_t n = std::min<size_t>(1 + pick(16), b.size() - at);
      for (size_t k = 0; k < n; ++k) b[at + k] = static_cast<uint8_t>(rng());
      return at + n;
    }
  }
  return 0;
}

TEST(Corpus, SeededRandomMutations) {
  std::mt19937_64 rng(0x9e3779b97f4a7c15ull);
  size_t total = 0, accepted = 0;
  for (const CorpusFile& c : corpus(true)) {
    SCOPED_TRACE(c.name);
    const test::Fields fields = test::FieldWalker(c.bytes).walk();
    // Fewer rounds where one parse is expensive (big vocabularies).
    const size_t rounds = fields.header_end < 4096      ? 4000
                          : fields.header_end < 100'000 ? 1500
                                                        : 200;
    Bytes work = c.bytes;
    const size_t dirty_end = std::min(c.bytes.size(), fields.header_end + 64);
    for (size_t r = 0; r < rounds; ++r) {
      const size_t n = 1 + static_cast<size_t>(rng() % 4);
      size_t changed_end = 0;
      for (size_t k = 0; k < n; ++k) changed_end = std::max(changed_end, mutate(work, fields, rng));
      const Outcome o = check_parse(work.data(), work.size(), c.name);
      ++total;
      accepted += o.ok ? 1 : 0;
      if (::testing::Test::HasFailure()) {
        ADD_FAILURE() << "round " << r << " of " << c.name;
        return;
      }
      // Restore the changed prefix.
      std::memcpy(work.data(), c.bytes.data(), std::max(changed_end, dirty_end));
    }
  }
  std::cout << "[ corpus   ] " << total << " mutated parses, " << accepted << " accepted\n";
  EXPECT_GT(total, 10000u);
}

// Writer-made seeds for the fuzzer: always checked here; written to $HEARTH_GGUF_SEED_DIR
// (as seed-N.bin) when that is set. See fuzz/run_gguf_fuzz.sh.
TEST(Corpus, FuzzSeeds) {
  std::vector<Bytes> seeds;
  seeds.push_back(test::sample_writer().to_bytes());
  {
    Writer w;
    w.set("general.architecture", Value::make_string("llama"));
    w.set("general.alignment", Value::make_u32(8));
    w.add_tensor("a", TensorType::Q4_0, {32, 2}, Bytes(36, 1));
    w.add_tensor("b", TensorType::I32, {1, 1, 1, 3}, Bytes(12, 2));
    seeds.push_back(w.to_bytes());
  }
  {
    Writer w;
    Value v = Value::make_string_array({"x"});
    for (int d = 1; d < kMaxArrayDepth; ++d) v = Value::make_array_array({v});
    w.set("deep", v);
    w.set("b", Value::make_bool(false));
    seeds.push_back(w.to_bytes());
  }
  seeds.push_back(Writer().to_bytes());
  Bytes v2 = test::sample_writer().to_bytes();
  v2[4] = 2;
  seeds.push_back(v2);

  const char* dir = std::getenv("HEARTH_GGUF_SEED_DIR");
  for (size_t k = 0; k < seeds.size(); ++k) {
    EXPECT_TRUE(check_parse(seeds[k].data(), seeds[k].size(), "seed.gguf").ok) << k;
    EXPECT_LT(seeds[k].size(), 4096u);
    if (dir != nullptr && *dir != '\0') {
      std::filesystem::create_directories(dir);
      std::ofstream out(std::string(dir) + "/seed-" + std::to_string(k) + ".bin", std::ios::binary);
      out.write(reinterpret_cast<const char*>(seeds[k].data()),
                static_cast<std::streamsize>(seeds[k].size()));
      ASSERT_TRUE(out.good());
    }
  }
}

}  // namespace
}  // namespace hearth::gguf
