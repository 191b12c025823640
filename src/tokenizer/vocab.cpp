#include "tokenizer/vocab.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>

#include "gguf/reader.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pretokenizer.h"
#include "util/error.h"

namespace hearth {

namespace {

// A token text fit for an error message: quoted, control and non-ASCII bytes escaped, cut.
std::string printable(std::string_view s) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < 40; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  out += s.size() > 40 ? "'..." : "'";
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "<0xAB>" -> 0xAB; -1 when `s` is not of that form.
int parse_byte_token(std::string_view s) {
  if (s.size() != 6 || s[0] != '<' || s[1] != '0' || s[2] != 'x' || s[5] != '>') return -1;
  const int hi = hex_value(s[3]);
  const int lo = hex_value(s[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

uint32_t attr_of_type(int32_t type) {
  switch (static_cast<TokenType>(type)) {
    case TokenType::Normal:
      return kAttrNormal;
    case TokenType::Unknown:
      return kAttrUnknown;
    case TokenType::Control:
      return kAttrControl;
    case TokenType::UserDefined:
      return kAttrUserDefined;
    case TokenType::Unused:
      return kAttrUnused;
    case TokenType::Byte:
      return kAttrByte;
    case TokenType::Undefined:
      return kAttrUndefined;
  }
  return kAttrUndefined;  // unknown type values are treated as UNDEFINED, as llama.cpp does
}

// Texts llama.cpp takes for an end-of-turn token when tokenizer.ggml.eot_token_id is absent.
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>",      "<|im_end|>", "<|end|>", "<end_of_turn>",      "<|endoftext|>",
    "<|end_of_text|>", "<EOT>",      "_<EOT>",  "<end_of_utterance>",
};
// Texts llama.cpp treats as end of generation (besides EOS/EOT/EOM).
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>",    "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",        "<end_of_turn>",
    "<|endoftext|>", "<|eom_id|>", "<EOT>",   "_<EOT>",     "<|end_of_text|>", "<end_of_utterance>",
};

VocabType parse_model(const std::string& model, const std::string& source) {
  if (model == "llama") return VocabType::Spm;
  if (model == "gpt2") return VocabType::Bpe;
  if (model == "bert") return VocabType::Wpm;
  if (model == "t5") return VocabType::Ugm;
  if (model == "rwkv") return VocabType::Rwkv;
  if (model == "no_vocab" || model == "none") {
    fail("{}: tokenizer.ggml.model is '{}': the file has no vocabulary", source, model);
  }
  fail("{}: unknown tokenizer model '{}' (tokenizer.ggml.model)", source, model);
}

// Flattens a trie of the special token texts: nodes in breadth-first order, each node's edges
// contiguous and sorted by byte.
Vocab::SpecialTrie build_special_trie(const std::vector<std::string>& texts,
                                      const std::vector<TokenId>& specials) {
  struct TmpNode {
    std::map<uint8_t, uint32_t> children;
    int32_t special = -1;
  };
  std::vector<TmpNode> tmp(1);
  for (size_t k = 0; k < specials.size(); ++k) {
    uint32_t node = 0;
    for (const char c : texts[static_cast<size_t>(specials[k])]) {
      const auto b = static_cast<uint8_t>(c);
      auto it = tmp[node].children.find(b);
      if (it == tmp[node].children.end()) {
        tmp.emplace_back();
        it = tmp[node].children.emplace(b, static_cast<uint32_t>(tmp.size() - 1)).first;
      }
      node = it->second;
    }
    if (tmp[node].special < 0) tmp[node].special = static_cast<int32_t>(k);
  }
  Vocab::SpecialTrie trie;
  trie.nodes.resize(tmp.size());
  std::vector<uint32_t> order = {0};  // BFS; new index = position in `order`
  std::vector<uint32_t> new_index(tmp.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) {
    const TmpNode& t = tmp[order[i]];
    Vocab::SpecialTrie::Node& n = trie.nodes[i];
    n.special = t.special;
    n.first_edge = static_cast<uint32_t>(trie.edges.size());
    n.n_edges = static_cast<uint32_t>(t.children.size());
    for (const auto& [byte, child] : t.children) {
      new_index[child] = static_cast<uint32_t>(order.size());
      order.push_back(child);
      trie.edges.push_back({byte, new_index[child]});
      if (i == 0) trie.root[byte] = new_index[child];
    }
  }
  return trie;
}

}  // namespace

uint32_t Vocab::SpecialTrie::child(uint32_t node, uint8_t byte) const {
  const Node& n = nodes[node];
  const Edge* first = edges.data() + n.first_edge;
  const Edge* last = first + n.n_edges;
  const Edge* it =
      std::lower_bound(first, last, byte, [](const Edge& e, uint8_t b) { return e.byte < b; });
  return (it != last && it->byte == byte) ? it->node : 0;
}

size_t Vocab::checked(TokenId id) const {
  if (!valid_id(id)) fail("token id {} out of range (vocabulary has {} tokens)", id, n_tokens());
  return static_cast<size_t>(id);
}

TokenId Vocab::find(std::string_view text) const {
  const auto it = ids_.find(text);
  return it == ids_.end() ? kNoToken : it->second;
}

int Vocab::token_to_byte(TokenId id) const {
  return byte_of_token_[checked(id)];
}

bool Vocab::is_eog(TokenId id) const {
  return id != kNoToken && std::find(eog_ids_.begin(), eog_ids_.end(), id) != eog_ids_.end();
}

Vocab Vocab::build(VocabData data, const std::string& source) {
  Vocab v;
  v.type_ = parse_model(data.model, source);
  v.model_ = data.model;
  v.pre_ = data.pre;

  const size_t n = data.tokens.size();
  if (n == 0) fail("{}: tokenizer.ggml.tokens is empty", source);
  if (n > static_cast<size_t>(std::numeric_limits<TokenId>::max())) {
    fail("{}: tokenizer.ggml.tokens has {} entries, too many", source, n);
  }
  if (!data.scores.empty() && data.scores.size() != n) {
    fail("{}: tokenizer.ggml.scores has {} entries but tokenizer.ggml.tokens has {}", source,
         data.scores.size(), n);
  }
  if (!data.types.empty() && data.types.size() != n) {
    fail("{}: tokenizer.ggml.token_type has {} entries but tokenizer.ggml.tokens has {}", source,
         data.types.size(), n);
  }

  v.texts_ = std::move(data.tokens);
  v.scores_ = data.scores.empty() ? std::vector<float>(n, 0.0f) : std::move(data.scores);
  v.types_.resize(n, TokenType::Normal);
  v.attrs_.resize(n, kAttrNormal);
  v.byte_of_token_.assign(n, -1);
  v.ids_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<TokenId>(i);
    std::string& text = v.texts_[i];
    if (text.empty()) text = fmt::format("[EMPTY_{}]", i);  // as llama.cpp renames them
    const auto [it, inserted] = v.ids_.emplace(text, id);
    if (!inserted) {
      fail("{}: tokenizer.ggml.tokens: duplicate token text {} (ids {} and {})", source,
           printable(text), it->second, id);
    }
    v.max_token_len_ = std::max(v.max_token_len_, text.size());
    if (!data.types.empty()) {
      v.types_[i] = static_cast<TokenType>(data.types[i]);
      v.attrs_[i] = attr_of_type(data.types[i]);
    }
    if (v.types_[i] == TokenType::Byte) {
      const int byte = parse_byte_token(text);
      if (byte < 0) {
        fail("{}: token {} has type BYTE but its text {} is not of the form <0xHH>", source, id,
             printable(text));
      }
      v.byte_of_token_[i] = static_cast<int16_t>(byte);
    }
  }

  // Byte fallback table, as llama.cpp's byte_to_token looks it up: "<0xAB>" (upper-case hex,
  // whatever the token's type), else a token that is the byte itself.
  // Byte-level BPE: the byte's GPT-2 character.
  for (int b = 0; b < 256; ++b) {
    TokenId id = kNoToken;
    if (v.type_ == VocabType::Bpe) {
      id = v.find(byte_level_char(static_cast<uint8_t>(b)));
    } else {
      id = v.find(fmt::format("<0x{:02X}>", b));
      if (id == kNoToken) id = v.find(std::string(1, static_cast<char>(b)));
    }
    v.byte_tokens_[static_cast<size_t>(b)] = id;
  }
  if (v.type_ == VocabType::Bpe) v.merges_ = std::move(data.merges);

  // Special ids: model defaults, overridden by the stored values.
  TokenId def_bos = kNoToken, def_eos = kNoToken, def_unk = kNoToken, def_sep = kNoToken;
  TokenId def_pad = kNoToken;
  bool def_add_bos = false, def_add_space_prefix = false;
  if (v.type_ == VocabType::Spm) {
    def_bos = 1;
    def_eos = 2;
    def_unk = 0;
    def_add_bos = true;
    def_add_space_prefix = true;
  } else if (v.type_ == VocabType::Bpe) {
    def_add_bos = bpe_pre_info(v.pre_).add_bos;  // Llama 3, Tekken: true
  } else if (v.type_ == VocabType::Wpm) {
    // BERT: [CLS] = 101 (added as BOS), [UNK] = 100, [SEP] = 102, [PAD] = 0.
    def_bos = 101;
    def_unk = 100;
    def_sep = 102;
    def_pad = 0;
    def_add_bos = true;
  }
  auto resolve = [&](const std::optional<int64_t>& stored, TokenId def, const char* key) {
    if (!stored) return v.valid_id(def) ? def : kNoToken;
    const int64_t id = *stored;
    if (id < 0 || id == 0xFFFFFFFFll) return kNoToken;
    if (static_cast<uint64_t>(id) >= n) {
      fail("{}: tokenizer.ggml.{} = {} is out of range (vocabulary has {} tokens)", source, key, id,
           n);
    }
    return static_cast<TokenId>(id);
  };
  v.bos_ = resolve(data.bos_id, def_bos, "bos_token_id");
  v.eos_ = resolve(data.eos_id, def_eos, "eos_token_id");
  v.unk_ = resolve(data.unk_id, def_unk, "unknown_token_id");
  v.sep_ = resolve(data.sep_id, def_sep, "seperator_token_id");
  v.pad_ = resolve(data.pad_id, def_pad, "padding_token_id");
  v.eot_ = resolve(data.eot_id, kNoToken, "eot_token_id");
  v.eom_ = resolve(data.eom_id, kNoToken, "eom_token_id");
  // BPE / WordPiece: the family default (not a stored flag) only applies when there is a BOS
  // token to add. (SPM keeps the strict rule: its default BOS is part of the format.)
  if (v.type_ != VocabType::Spm && v.bos_ == kNoToken) def_add_bos = false;
  v.add_bos_ = data.add_bos.value_or(def_add_bos);
  v.add_eos_ = data.add_eos.value_or(false);
  v.add_space_prefix_ = data.add_space_prefix.value_or(def_add_space_prefix);
  if (v.add_bos_ && v.bos_ == kNoToken) {
    fail("{}: tokenizer.ggml.add_bos_token is set but the vocabulary has no BOS token", source);
  }
  if (v.add_eos_ && v.eos_ == kNoToken) {
    fail("{}: tokenizer.ggml.add_eos_token is set but the vocabulary has no EOS token", source);
  }

  // llama.cpp's fix-ups by token text (scanning ids in order, so the result is deterministic):
  // EOT/EOM detection when not given, end-of-generation set, "unused" control tokens. Tokens
  // taken for EOT/EOM/EOG are forced to be CONTROL.
  auto force_control = [&](TokenId id) { v.attrs_[static_cast<size_t>(id)] |= kAttrControl; };
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<TokenId>(i);
    const std::string_view text = v.texts_[i];
    if (v.eot_ == kNoToken &&
        std::find(std::begin(kEotTexts), std::end(kEotTexts), text) != std::end(kEotTexts)) {
      v.eot_ = id;
      force_control(id);
    }
    if (v.eom_ == kNoToken && text == "<|eom_id|>") {
      v.eom_ = id;
      force_control(id);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<TokenId>(i);
    const std::string_view text = v.texts_[i];
    if (std::find(std::begin(kEogTexts), std::end(kEogTexts), text) != std::end(kEogTexts)) {
      v.eog_ids_.push_back(id);
      force_control(id);
    }
    if ((v.attrs_[i] & kAttrControl) && text.find("unused") != std::string_view::npos) {
      v.attrs_[i] |= kAttrUnused;
    }
  }
  for (TokenId id : {v.eos_, v.eot_, v.eom_}) {
    if (id != kNoToken) v.eog_ids_.push_back(id);
  }
  std::sort(v.eog_ids_.begin(), v.eog_ids_.end());
  v.eog_ids_.erase(std::unique(v.eog_ids_.begin(), v.eog_ids_.end()), v.eog_ids_.end());
  // gpt-oss style vocabularies: "<|end|>" ends a message, not the generation.
  {
    const TokenId end = v.find("<|end|>");
    const TokenId ret = v.find("<|return|>");
    const TokenId call = v.find("<|call|>");
    if (end != kNoToken && ret != kNoToken && call != kNoToken && v.is_eog(end) && v.is_eog(ret) &&
        v.is_eog(call)) {
      v.eog_ids_.erase(std::find(v.eog_ids_.begin(), v.eog_ids_.end(), end));
      v.attrs_[static_cast<size_t>(end)] = kAttrUserDefined;
    }
  }

  // Tokens matched as text before tokenization, longest first (ties by id, for determinism).
  for (size_t i = 0; i < n; ++i) {
    if (v.attrs_[i] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) {
      v.special_tokens_.push_back(static_cast<TokenId>(i));
    }
  }
  std::stable_sort(v.special_tokens_.begin(), v.special_tokens_.end(), [&](TokenId a, TokenId b) {
    return v.texts_[static_cast<size_t>(a)].size() > v.texts_[static_cast<size_t>(b)].size();
  });
  v.special_trie_ = build_special_trie(v.texts_, v.special_tokens_);
  for (const TokenId id : v.special_tokens_) {
    if (!(v.attrs_[static_cast<size_t>(id)] & (kAttrControl | kAttrUnknown))) {
      v.special_trie_.any_always = true;
    }
  }

  // Per-model attributes llama.cpp sets by general.name: Phi-3 strips whitespace after most of
  // its special tokens.
  std::string name = data.name;
  std::transform(name.begin(), name.end(), name.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    auto set_rstrip = [&](TokenId id, bool on) {
      if (id == kNoToken) return;
      auto& a = v.attrs_[static_cast<size_t>(id)];
      a = on ? (a | kAttrRStrip) : (a & ~static_cast<uint32_t>(kAttrRStrip));
    };
    for (TokenId id : v.special_tokens_) set_rstrip(id, true);
    set_rstrip(v.find("</s>"), true);
    for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) set_rstrip(v.find(t), false);
  }
  return v;
}

Vocab Vocab::from_gguf(const gguf::File& file) {
  const std::string& src = file.name();
  VocabData d;
  const auto model = file.get_string("tokenizer.ggml.model");
  if (!model) fail("{}: no tokenizer in this file (tokenizer.ggml.model is missing)", src);
  d.model = *model;
  d.pre = file.get_string("tokenizer.ggml.pre").value_or("");
  d.name = file.get_string("general.name").value_or("");

  const gguf::Value* tokens = file.get_array("tokenizer.ggml.tokens");
  if (!tokens) fail("{}: tokenizer.ggml.tokens is missing", src);
  if (tokens->elem_type != gguf::ValueType::STRING) {
    fail("{}: tokenizer.ggml.tokens must be an array of strings, not of {}", src,
         gguf::value_type_name(tokens->elem_type));
  }
  d.tokens = tokens->strings;

  if (const gguf::Value* scores = file.get_array("tokenizer.ggml.scores")) {
    if (!gguf::is_float_type(scores->elem_type)) {
      fail("{}: tokenizer.ggml.scores must be an array of floats, not of {}", src,
           gguf::value_type_name(scores->elem_type));
    }
    d.scores.reserve(scores->floats.size());
    for (double s : scores->floats) d.scores.push_back(static_cast<float>(s));
  }
  if (const gguf::Value* merges = file.get_array("tokenizer.ggml.merges")) {
    if (merges->elem_type != gguf::ValueType::STRING) {
      fail("{}: tokenizer.ggml.merges must be an array of strings, not of {}", src,
           gguf::value_type_name(merges->elem_type));
    }
    d.merges = merges->strings;
  }
  if (const gguf::Value* types = file.get_array("tokenizer.ggml.token_type")) {
    if (!gguf::is_integer_type(types->elem_type)) {
      fail("{}: tokenizer.ggml.token_type must be an array of integers, not of {}", src,
           gguf::value_type_name(types->elem_type));
    }
    d.types.reserve(types->ints.size());
    for (int64_t t : types->ints) {
      const bool fits =
          t >= std::numeric_limits<int32_t>::min() && t <= std::numeric_limits<int32_t>::max();
      d.types.push_back(fits ? static_cast<int32_t>(t) : 0);  // out of range: UNDEFINED
    }
  }

  d.bos_id = file.get_int("tokenizer.ggml.bos_token_id");
  d.eos_id = file.get_int("tokenizer.ggml.eos_token_id");
  d.unk_id = file.get_int("tokenizer.ggml.unknown_token_id");
  d.sep_id = file.get_int("tokenizer.ggml.seperator_token_id");
  d.pad_id = file.get_int("tokenizer.ggml.padding_token_id");
  d.eot_id = file.get_int("tokenizer.ggml.eot_token_id");
  d.eom_id = file.get_int("tokenizer.ggml.eom_token_id");
  d.add_bos = file.get_bool("tokenizer.ggml.add_bos_token");
  d.add_eos = file.get_bool("tokenizer.ggml.add_eos_token");
  d.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix");
  return build(std::move(d), src);
}

}  // namespace hearth
