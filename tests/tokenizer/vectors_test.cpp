// The tokenizer vectors of ../shared/tokenizers (index.json): every vocabulary, every string.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tok_test_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace hearth {
namespace {

using test::escaped;
using test::ids_str;

// The vocabularies this test knows; VectorsIndex.EveryVocabularyIsCovered keeps it in step with
// index.json.
const std::vector<std::string> kVocabs = {"llama-spm",    "phi-3",    "gpt-2", "mpt",
                                          "deepseek-llm", "bert-bge", "qwen3", "llama3"};

class Vectors : public ::testing::TestWithParam<std::string> {};

TEST_P(Vectors, EveryStringMatches) {
  const auto index = test::read_vocab_index();
  if (index.empty()) GTEST_SKIP() << "SKIP: no " << test::shared_path("tokenizers/index.json");
  const test::VocabIndexEntry* entry = nullptr;
  for (const auto& e : index) {
    if (e.name == GetParam()) entry = &e;
  }
  ASSERT_NE(entry, nullptr) << GetParam() << " is not in index.json";
  const std::string base = test::shared_path("tokenizers/" + entry->gguf);
  const Tokenizer& tok = test::load_tokenizer(base);
  const auto cases = test::read_vocab_cases(base);
  ASSERT_EQ(cases.size(), entry->n_strings);
  size_t matches = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const auto ids = tok.encode(c.text, /*add_special=*/false, /*parse_special=*/false);
    if (ids == c.ids) {
      ++matches;
    } else if (i == matches) {  // the first mismatch: say everything about it
      ADD_FAILURE() << entry->name << ": first mismatching string #" << i << " " << escaped(c.text)
                    << "\n  expected " << ids_str(c.ids) << "\n  got      " << ids_str(ids);
    }
  }
  EXPECT_EQ(matches, cases.size()) << entry->name << ": " << cases.size() - matches << " of "
                                   << cases.size() << " strings tokenize differently";
  std::printf("[  vectors ] %-13s %zu/%zu strings match\n", entry->name.c_str(), matches,
              cases.size());
}

INSTANTIATE_TEST_SUITE_P(AllVocabs, Vectors, ::testing::ValuesIn(kVocabs), [](const auto& info) {
  std::string n = info.param;
  for (char& c : n) {
    if (c == '-') c = '_';
  }
  return n;
});

TEST(VectorsIndex, EveryVocabularyIsCovered) {
  const auto index = test::read_vocab_index();
  if (index.empty()) GTEST_SKIP() << "SKIP: no " << test::shared_path("tokenizers/index.json");
  for (const auto& e : index) {
    EXPECT_NE(std::find(kVocabs.begin(), kVocabs.end(), e.name), kVocabs.end())
        << "index.json lists '" << e.name << "', which this test does not run";
  }
}

}  // namespace
}  // namespace hearth
