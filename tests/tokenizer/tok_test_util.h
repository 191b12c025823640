// Helpers for the tokenizer tests: loading vocabularies, the llama.cpp vector files, and
// printing token lists and byte strings readably.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/shared_data.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace hearth::test {

// Loads (once per path per process) the tokenizer of a GGUF file under ../shared.
inline const Tokenizer& load_tokenizer(const std::string& path) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto it = cache.find(path);
  if (it == cache.end()) {
    const gguf::File file = gguf::File::open(path);
    it = cache.emplace(path, std::make_unique<Tokenizer>(Tokenizer::from_gguf(file))).first;
  }
  return *it->second;
}

inline std::string ids_str(const std::vector<TokenId>& ids) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < ids.size(); ++i) os << (i ? " " : "") << ids[i];
  os << "]";
  return os.str();
}

// Bytes as a C-like escaped string, for failure messages.
inline std::string escaped(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + "\"";
}

inline std::string from_hex(std::string_view hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(nibble(hex[i]) * 16 + nibble(hex[i + 1]));
  }
  return out;
}

// One vocabulary of ../shared/tokenizers/index.json.
struct VocabIndexEntry {
  std::string name;   // e.g. "phi-3"
  std::string gguf;   // file name under tokenizers/
  std::string model;  // tokenizer.ggml.model
  size_t n_strings = 0;
};

// The vocabularies index.json lists; empty when the shared data is absent.
inline std::vector<VocabIndexEntry> read_vocab_index() {
  std::vector<VocabIndexEntry> out;
  if (!shared_exists("tokenizers/index.json")) return out;
  const auto j = nlohmann::json::parse(read_file(shared_path("tokenizers/index.json")));
  for (const auto& v : j.at("vocabs")) {
    out.push_back({v.at("name").get<std::string>(), v.at("gguf").get<std::string>(),
                   v.at("tokenizer_model").get<std::string>(), v.at("n_strings").get<size_t>()});
  }
  return out;
}

// One test string of a llama.cpp vector pair (`.inp` / `.out`).
struct VocabCase {
  std::string text;
  std::vector<TokenId> ids;
};

// Reads `<base>.inp` and `<base>.out` (format: ../shared/tokenizers/README.md). Fails the
// current test (and returns an empty list) when the two files do not line up.
inline std::vector<VocabCase> read_vocab_cases(const std::string& base) {
  const std::string inp = read_file(base + ".inp");
  const std::string out = read_file(base + ".out");
  const std::string_view sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t pos = 0;
  while (true) {
    const size_t hit = inp.find(sep, pos);
    if (hit == std::string::npos) break;
    texts.push_back(inp.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  EXPECT_EQ(pos, inp.size()) << base << ".inp does not end with the separator";
  std::vector<std::vector<TokenId>> id_lines;
  pos = 0;
  while (pos < out.size()) {
    size_t eol = out.find('\n', pos);
    if (eol == std::string::npos) eol = out.size();
    std::istringstream line(out.substr(pos, eol - pos));
    std::vector<TokenId> ids;
    long long v = 0;
    while (line >> v) ids.push_back(static_cast<TokenId>(v));
    id_lines.push_back(std::move(ids));
    pos = eol + 1;
  }
  EXPECT_EQ(texts.size(), id_lines.size()) << base << ": .inp and .out disagree on the count";
  std::vector<VocabCase> cases;
  if (texts.size() != id_lines.size()) return cases;
  for (size_t i = 0; i < texts.size(); ++i) cases.push_back({texts[i], id_lines[i]});
  return cases;
}

// A small hand-made SPM vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then `pieces`
// (text, score) as NORMAL tokens. Ids of the pieces start at 259.
inline VocabData toy_spm_data(const std::vector<std::pair<std::string, float>>& pieces,
                              bool with_bytes = true) {
  VocabData d;
  d.model = "llama";
  d.tokens = {"<unk>", "<s>", "</s>"};
  d.types = {2, 3, 3};
  d.scores = {0, 0, 0};
  if (with_bytes) {
    for (int b = 0; b < 256; ++b) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "<0x%02X>", b);
      d.tokens.push_back(buf);
      d.types.push_back(6);
      d.scores.push_back(0);
    }
  }
  for (const auto& [text, score] : pieces) {
    d.tokens.push_back(text);
    d.types.push_back(1);
    d.scores.push_back(score);
  }
  return d;
}

}  // namespace hearth::test
