#include "tokenizer/vocab.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "tok_test_util.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace hearth {
namespace {

using test::toy_spm_data;

// Expects `f` to throw hearth::Error whose message contains `needle`.
template <typename F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no Error thrown; expected one mentioning '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << needle;
  }
}

TEST(Vocab, SpmDefaultsWhenKeysAreAbsent) {
  const Vocab v =
      Vocab::build(toy_spm_data({{"\xE2\x96\x81"
                                  "a",
                                  -1}}));
  EXPECT_EQ(v.type(), VocabType::Spm);
  EXPECT_EQ(v.n_tokens(), 3u + 256u + 1u);
  EXPECT_EQ(v.unk(), 0);
  EXPECT_EQ(v.bos(), 1);
  EXPECT_EQ(v.eos(), 2);
  EXPECT_EQ(v.sep(), kNoToken);
  EXPECT_EQ(v.pad(), kNoToken);
  EXPECT_EQ(v.eot(), kNoToken);
  EXPECT_TRUE(v.add_bos());
  EXPECT_FALSE(v.add_eos());
  EXPECT_TRUE(v.add_space_prefix());
}

TEST(Vocab, StoredFlagsAndIdsOverrideDefaults) {
  VocabData d = toy_spm_data({});
  d.add_bos = false;
  d.add_eos = true;
  d.add_space_prefix = false;
  d.bos_id = 2;
  d.eos_id = 1;
  d.pad_id = 0xFFFFFFFFll;  // u32 -1: none
  d.sep_id = -1;
  d.unk_id = 0xFFFFFFFFll;
  const Vocab v = Vocab::build(d);
  EXPECT_FALSE(v.add_bos());
  EXPECT_TRUE(v.add_eos());
  EXPECT_FALSE(v.add_space_prefix());
  EXPECT_EQ(v.bos(), 2);
  EXPECT_EQ(v.eos(), 1);
  EXPECT_EQ(v.pad(), kNoToken);
  EXPECT_EQ(v.sep(), kNoToken);
  EXPECT_EQ(v.unk(), kNoToken);
}

TEST(Vocab, ValidationErrors) {
  {
    VocabData d = toy_spm_data({});
    d.scores.pop_back();
    expect_error([&] { Vocab::build(d, "x.gguf"); },
                 "x.gguf: tokenizer.ggml.scores has 258 entries but tokenizer.ggml.tokens has 259");
  }
  {
    VocabData d = toy_spm_data({});
    d.types.push_back(1);
    expect_error([&] { Vocab::build(d); }, "tokenizer.ggml.token_type has 260 entries");
  }
  {
    VocabData d = toy_spm_data({});
    d.eos_id = 259;
    expect_error([&] { Vocab::build(d); },
                 "tokenizer.ggml.eos_token_id = 259 is out of range (vocabulary has 259 tokens)");
  }
  {
    VocabData d = toy_spm_data({{"ab", -1}, {"ab", -2}});
    expect_error([&] { Vocab::build(d); }, "duplicate token text 'ab' (ids 259 and 260)");
  }
  {
    VocabData d = toy_spm_data({});
    d.tokens[3] = "<0xG0>";
    expect_error([&] { Vocab::build(d); }, "token 3 has type BYTE but its text '<0xG0>'");
  }
  {
    VocabData d;
    expect_error([&] { Vocab::build(d); }, "tokenizer.ggml.tokens is empty");
  }
  {
    VocabData d = toy_spm_data({});
    d.model = "sentencepiece-xl";
    expect_error([&] { Vocab::build(d); }, "unknown tokenizer model 'sentencepiece-xl'");
  }
  {
    VocabData d = toy_spm_data({});
    d.bos_id = 0xFFFFFFFFll;  // none, but add_bos defaults to true for SPM
    expect_error([&] { Vocab::build(d); }, "add_bos_token is set but the vocabulary has no BOS");
  }
}

TEST(Vocab, LookupsAndAttributes) {
  const Vocab v = Vocab::build(toy_spm_data({{"\xE2\x96\x81"
                                              "a",
                                              -1},
                                             {"<|im_end|>", 0}}));
  EXPECT_EQ(v.find("<s>"), 1);
  EXPECT_EQ(v.find("\xE2\x96\x81"
                   "a"),
            259);
  EXPECT_EQ(v.find("nope"), kNoToken);
  EXPECT_EQ(v.byte_to_token(0x00), 3);
  EXPECT_EQ(v.byte_to_token(0x41), 3 + 0x41);
  EXPECT_EQ(v.byte_to_token(0xFF), 258);
  EXPECT_EQ(v.token_to_byte(3 + 0xAB), 0xAB);
  EXPECT_EQ(v.token_to_byte(259), -1);
  EXPECT_TRUE(v.is_unknown(0));
  EXPECT_TRUE(v.is_control(1));
  EXPECT_TRUE(v.is_byte(10));
  EXPECT_TRUE(v.is_normal(259));
  EXPECT_EQ(v.token_type(10), TokenType::Byte);
  // A NORMAL token with an end-of-turn text is taken as EOT and forced to CONTROL.
  EXPECT_EQ(v.eot(), 260);
  EXPECT_TRUE(v.is_control(260));
  EXPECT_TRUE(v.is_eog(2));
  EXPECT_TRUE(v.is_eog(260));
  EXPECT_FALSE(v.is_eog(1));  // BOS does not end generation
  EXPECT_FALSE(v.is_eog(259));
  EXPECT_FALSE(v.is_eog(kNoToken));
  EXPECT_FALSE(v.is_eog(100000));
  // Special texts: longest first.
  ASSERT_EQ(v.special_tokens().size(), 4u);
  EXPECT_EQ(v.special_tokens()[0], 260);
  EXPECT_EQ(v.special_tokens()[1], 0);  // <unk>, 5 bytes
  EXPECT_EQ(v.special_tokens()[2], 2);  // </s>
  EXPECT_EQ(v.special_tokens()[3], 1);  // <s>
  expect_error([&] { (void)v.text(-1); }, "token id -1 out of range");
  expect_error([&] { (void)v.attr(261); }, "token id 261 out of range");
}

TEST(Vocab, ByteFallbackTableWithoutByteTokens) {
  const Vocab v = Vocab::build(toy_spm_data({{"x", -1}}, /*with_bytes=*/false));
  EXPECT_EQ(v.byte_to_token('x'), 3);  // a token that is the byte itself
  EXPECT_EQ(v.byte_to_token('y'), kNoToken);
}

TEST(Vocab, Stories260KMetadata) {
  HEARTH_SHARED_OR_SKIP(path, "models/stories260K.gguf");
  const Vocab& v = test::load_tokenizer(path).vocab();
  EXPECT_EQ(v.model(), "llama");
  EXPECT_EQ(v.n_tokens(), 512u);
  EXPECT_EQ(v.unk(), 0);
  EXPECT_EQ(v.bos(), 1);
  EXPECT_EQ(v.eos(), 2);
  EXPECT_EQ(v.sep(), kNoToken);  // stored as 4294967295
  EXPECT_EQ(v.pad(), kNoToken);
  EXPECT_TRUE(v.add_bos());
  EXPECT_FALSE(v.add_eos());
  EXPECT_TRUE(v.add_space_prefix());
  EXPECT_TRUE(v.is_unknown(0));
  EXPECT_TRUE(v.is_control(1));
  EXPECT_TRUE(v.is_control(2));
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(v.byte_to_token(static_cast<uint8_t>(b)), 3 + b);
    EXPECT_TRUE(v.is_byte(3 + b));
  }
  EXPECT_EQ(v.text(403), "\xE2\x96\x81Once");
  EXPECT_FLOAT_EQ(v.score(259), 0.0f);
  EXPECT_FLOAT_EQ(v.score(260), -1.0f);
  EXPECT_EQ(v.eog_ids(), std::vector<TokenId>{2});
}

TEST(Vocab, Phi3Metadata) {
  HEARTH_SHARED_OR_SKIP(path, "tokenizers/ggml-vocab-phi-3.gguf");
  const Vocab& v = test::load_tokenizer(path).vocab();
  EXPECT_EQ(v.n_tokens(), 32064u);
  EXPECT_EQ(v.eos(), 32000);
  EXPECT_EQ(v.pad(), 32000);
  EXPECT_TRUE(v.is_user_defined(2));  // "</s>" is USER_DEFINED in this vocabulary
  EXPECT_TRUE(v.is_eog(32000));       // <|endoftext|>
  EXPECT_TRUE(v.is_eog(32007));       // <|end|>, found by its text
  EXPECT_FALSE(v.is_eog(1));
  // general.name "Phi3": llama.cpp strips whitespace after its special tokens, except these.
  EXPECT_TRUE(v.attr(32007) & kAttrRStrip);
  EXPECT_TRUE(v.attr(2) & kAttrRStrip);
  EXPECT_FALSE(v.attr(1) & kAttrRStrip);
  EXPECT_FALSE(v.attr(32000) & kAttrRStrip);
}

TEST(Tokenizer, Gpt2VocabularyLoadsAsBpe) {
  HEARTH_SHARED_OR_SKIP(path, "tokenizers/ggml-vocab-gpt-2.gguf");
  const gguf::File file = gguf::File::open(path);
  const Vocab v = Vocab::from_gguf(file);
  EXPECT_EQ(v.type(), VocabType::Bpe);
  EXPECT_EQ(v.n_tokens(), 50257u);
  EXPECT_EQ(v.merges().size(), 50000u);
  EXPECT_EQ(v.merges()[0], "\xC4\xA0 t");  // "Ġ t"
  EXPECT_EQ(v.byte_to_token(' '), v.find("\xC4\xA0"));
  EXPECT_EQ(v.byte_to_token('a'), v.find("a"));
  const Tokenizer tok = Tokenizer::from_gguf(file);
  ASSERT_NE(tok.bpe(), nullptr);
  EXPECT_EQ(tok.bpe()->n_merges(), 50000u);
  EXPECT_EQ(tok.bpe()->pre_info().family, "gpt-2");
}

TEST(Tokenizer, OtherModelTypesAreRefusedClearly) {
  VocabData d;
  d.model = "t5";
  d.tokens = {"<pad>", "</s>", "<unk>", "a"};
  expect_error([&] { Tokenizer::from_vocab(Vocab::build(d)); },
               "tokenizer model 't5' is not supported");
  d.model = "rwkv";
  expect_error([&] { Tokenizer::from_vocab(Vocab::build(d)); },
               "tokenizer model 'rwkv' is not supported");
  d.model = "gpt2";  // BPE needs its merges
  expect_error([&] { Tokenizer::from_vocab(Vocab::build(d)); }, "tokenizer.ggml.merges is missing");
}

// A minimal GGUF v3 image with metadata only, for the from_gguf error paths.
class GgufBuilder {
 public:
  GgufBuilder& str(const std::string& key, const std::string& value) {
    this->key(key, 8);
    put_str(value);
    ++n_;
    return *this;
  }
  GgufBuilder& u32(const std::string& key, uint32_t value) {
    this->key(key, 4);
    put(value);
    ++n_;
    return *this;
  }
  GgufBuilder& str_array(const std::string& key, const std::vector<std::string>& values) {
    this->key(key, 9);
    put(uint32_t{8});
    put(uint64_t{values.size()});
    for (const auto& s : values) put_str(s);
    ++n_;
    return *this;
  }
  GgufBuilder& i32_array(const std::string& key, const std::vector<int32_t>& values) {
    this->key(key, 9);
    put(uint32_t{5});
    put(uint64_t{values.size()});
    for (int32_t v : values) put(v);
    ++n_;
    return *this;
  }
  GgufBuilder& f32_array(const std::string& key, const std::vector<float>& values) {
    this->key(key, 9);
    put(uint32_t{6});
    put(uint64_t{values.size()});
    for (float v : values) put(v);
    ++n_;
    return *this;
  }
  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> out;
    auto app = [&](const void* p, size_t n) {
      out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    };
    const uint32_t magic = 0x46554747, version = 3;
    const uint64_t n_tensors = 0, n_kv = n_;
    app(&magic, 4);
    app(&version, 4);
    app(&n_tensors, 8);
    app(&n_kv, 8);
    out.insert(out.end(), body_.begin(), body_.end());
    return out;
  }

 private:
  template <typename T>
  void put(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    body_.insert(body_.end(), b, b + sizeof(T));
  }
  void put_str(const std::string& s) {
    put(uint64_t{s.size()});
    body_.insert(body_.end(), s.begin(), s.end());
  }
  void key(const std::string& k, uint32_t type) {
    put_str(k);
    put(type);
  }
  std::vector<uint8_t> body_;
  uint64_t n_ = 0;
};

TEST(Vocab, FromGgufErrors) {
  const std::vector<std::string> toks = {"<unk>", "<s>", "</s>", "a"};
  {
    const auto img = GgufBuilder().str("general.architecture", "llama").bytes();
    const auto f = gguf::File::parse(img.data(), img.size(), "mem.gguf");
    expect_error([&] { Vocab::from_gguf(f); }, "mem.gguf: no tokenizer in this file");
  }
  {
    const auto img = GgufBuilder()
                         .str("tokenizer.ggml.model", "llama")
                         .i32_array("tokenizer.ggml.tokens", {1, 2, 3})
                         .bytes();
    const auto f = gguf::File::parse(img.data(), img.size(), "mem.gguf");
    expect_error([&] { Vocab::from_gguf(f); }, "tokenizer.ggml.tokens must be an array of strings");
  }
  {
    const auto img = GgufBuilder()
                         .str("tokenizer.ggml.model", "llama")
                         .str_array("tokenizer.ggml.tokens", toks)
                         .f32_array("tokenizer.ggml.scores", {0, 0, 0})
                         .bytes();
    const auto f = gguf::File::parse(img.data(), img.size(), "mem.gguf");
    expect_error([&] { Vocab::from_gguf(f); },
                 "tokenizer.ggml.scores has 3 entries but tokenizer.ggml.tokens has 4");
  }
  {
    const auto img = GgufBuilder()
                         .str("tokenizer.ggml.model", "llama")
                         .str_array("tokenizer.ggml.tokens", toks)
                         .u32("tokenizer.ggml.bos_token_id", 7)
                         .bytes();
    const auto f = gguf::File::parse(img.data(), img.size(), "mem.gguf");
    expect_error([&] { Vocab::from_gguf(f); }, "tokenizer.ggml.bos_token_id = 7 is out of range");
  }
  {
    // No scores / token types: all NORMAL with score 0; 4294967295 = none.
    const auto img = GgufBuilder()
                         .str("tokenizer.ggml.model", "llama")
                         .str_array("tokenizer.ggml.tokens", toks)
                         .i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1})
                         .u32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu)
                         .bytes();
    const auto f = gguf::File::parse(img.data(), img.size(), "mem.gguf");
    const Vocab v = Vocab::from_gguf(f);
    EXPECT_EQ(v.n_tokens(), 4u);
    EXPECT_EQ(v.pad(), kNoToken);
    EXPECT_EQ(v.bos(), 1);
    EXPECT_TRUE(v.is_control(1));
    EXPECT_FLOAT_EQ(v.score(3), 0.0f);
  }
}

}  // namespace
}  // namespace hearth
