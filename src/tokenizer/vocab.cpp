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

template <size_t N>
bool contains(const std::string_view (&texts)[N], std::string_view text) {
  return std::find(std::begin(texts), std::end(texts), text) != std::end(texts);
}

// The array lengths Vocab::build relies on: a token list of a usable size, and scores and types
// (when given) with one entry per token.
void check_array_lengths(const VocabData& data, const std::string& source) {
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
}

// What a vocabulary type assumes when the file stores no special id or add_* flag.
struct SpecialDefaults {
  TokenId bos = kNoToken, eos = kNoToken, unk = kNoToken, sep = kNoToken, pad = kNoToken;
  bool add_bos = false, add_space_prefix = false;
};

SpecialDefaults special_defaults(VocabType type, const std::string& pre) {
  SpecialDefaults d;
  if (type == VocabType::Spm) {
    d.bos = 1;
    d.eos = 2;
    d.unk = 0;
    d.add_bos = true;
    d.add_space_prefix = true;
  } else if (type == VocabType::Bpe) {
    d.add_bos = bpe_pre_info(pre).add_bos;  // Llama 3, Tekken: true
  } else if (type == VocabType::Wpm) {
    // BERT: [CLS] = 101 (added as BOS), [UNK] = 100, [SEP] = 102, [PAD] = 0.
    d.bos = 101;
    d.unk = 100;
    d.sep = 102;
    d.pad = 0;
    d.add_bos = true;
  }
  return d;
}

// A stored special id (nullopt: absent, so the default applies when it is a valid id; negative
// or u32 -1: none), checked against the vocabulary's `n` tokens.
TokenId resolve_special_id(const std::optional<int64_t>& stored, TokenId def, const char* key,
                           size_t n, const std::string& source) {
  if (!stored) return def >= 0 && static_cast<size_t>(def) < n ? def : kNoToken;
  const int64_t id = *stored;
  if (id < 0 || id == 0xFFFFFFFFll) return kNoToken;
  if (static_cast<uint64_t>(id) >= n) {
    fail("{}: tokenizer.ggml.{} = {} is out of range (vocabulary has {} tokens)", source, key, id,
         n);
  }
  return static_cast<TokenId>(id);
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
  check_array_lengths(data, source);
  v.index_tokens(data, source);
  v.fill_byte_tokens();
  if (v.type_ == VocabType::Bpe) v.merges_ = std::move(data.merges);
  v.resolve_special_ids(data, source);
  v.detect_eot_eom();
  v.collect_eog_ids();
  v.collect_special_tokens();
  v.apply_model_name_fixups(data.name);
  return v;
}

void Vocab::index_tokens(VocabData& data, const std::string& source) {
  const size_t n = data.tokens.size();
  texts_ = std::move(data.tokens);
  scores_ = data.scores.empty() ? std::vector<float>(n, 0.0f) : std::move(data.scores);
  types_.resize(n, TokenType::Normal);
  attrs_.resize(n, kAttrNormal);
  byte_of_token_.assign(n, -1);
  ids_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<TokenId>(i);
    std::string& text = texts_[i];
    if (text.empty()) text = fmt::format("[EMPTY_{}]", i);  // as llama.cpp renames them
    const auto [it, inserted] = ids_.emplace(text, id);
    if (!inserted) {
      fail("{}: tokenizer.ggml.tokens: duplicate token text {} (ids {} and {})", source,
           printable(text), it->second, id);
    }
    max_token_len_ = std::max(max_token_len_, text.size());
    if (!data.types.empty()) {
      types_[i] = static_cast<TokenType>(data.types[i]);
      attrs_[i] = attr_of_type(data.types[i]);
    }
    if (types_[i] == TokenType::Byte) {
      const int byte = parse_byte_token(text);
      if (byte < 0) {
        fail("{}: token {} has type BYTE but its text {} is not of the form <0xHH>", source, id,
             printable(text));
      }
      byte_of_token_[i] = static_cast<int16_t>(byte);
    }
  }
}

// Byte fallback table, as llama.cpp's byte_to_token looks it up: "<0xAB>" (upper-case hex,
// whatever the token's type), else a token that is the byte itself.
// Byte-level BPE: the byte's GPT-2 character.
void Vocab::fill_byte_tokens() {
  for (int b = 0; b < 256; ++b) {
    TokenId id = kNoToken;
    if (type_ == VocabType::Bpe) {
      id = find(byte_level_char(static_cast<uint8_t>(b)));
    } else {
      id = find(fmt::format("<0x{:02X}>", b));
      if (id == kNoToken) id = find(std::string(1, static_cast<char>(b)));
    }
    byte_tokens_[static_cast<size_t>(b)] = id;
  }
}

// Special ids: model defaults, overridden by the stored values.
void Vocab::resolve_special_ids(const VocabData& data, const std::string& source) {
  SpecialDefaults def = special_defaults(type_, pre_);
  const size_t n = n_tokens();
  bos_ = resolve_special_id(data.bos_id, def.bos, "bos_token_id", n, source);
  eos_ = resolve_special_id(data.eos_id, def.eos, "eos_token_id", n, source);
  unk_ = resolve_special_id(data.unk_id, def.unk, "unknown_token_id", n, source);
  sep_ = resolve_special_id(data.sep_id, def.sep, "seperator_token_id", n, source);
  pad_ = resolve_special_id(data.pad_id, def.pad, "padding_token_id", n, source);
  eot_ = resolve_special_id(data.eot_id, kNoToken, "eot_token_id", n, source);
  eom_ = resolve_special_id(data.eom_id, kNoToken, "eom_token_id", n, source);
  // BPE / WordPiece: the family default (not a stored flag) only applies when there is a BOS
  // token to add. (SPM keeps the strict rule: its default BOS is part of the format.)
  if (type_ != VocabType::Spm && bos_ == kNoToken) def.add_bos = false;
  add_bos_ = data.add_bos.value_or(def.add_bos);
  add_eos_ = data.add_eos.value_or(false);
  add_space_prefix_ = data.add_space_prefix.value_or(def.add_space_prefix);
  if (add_bos_ && bos_ == kNoToken) {
    fail("{}: tokenizer.ggml.add_bos_token is set but the vocabulary has no BOS token", source);
  }
  if (add_eos_ && eos_ == kNoToken) {
    fail("{}: tokenizer.ggml.add_eos_token is set but the vocabulary has no EOS token", source);
  }
}

// llama.cpp's fix-ups by token text (scanning ids in order, so the result is deterministic):
// EOT/EOM detection when not given (detect_eot_eom), the end-of-generation set and "unused"
// control tokens (collect_eog_ids). Tokens taken for EOT/EOM/EOG are forced to be CONTROL.
void Vocab::force_control(TokenId id) {
  attrs_[static_cast<size_t>(id)] |= kAttrControl;
}

void Vocab::detect_eot_eom() {
  for (size_t i = 0; i < n_tokens(); ++i) {
    const auto id = static_cast<TokenId>(i);
    const std::string_view text = texts_[i];
    if (eot_ == kNoToken && contains(kEotTexts, text)) {
      eot_ = id;
      force_control(id);
    }
    if (eom_ == kNoToken && text == "<|eom_id|>") {
      eom_ = id;
      force_control(id);
    }
  }
}

void Vocab::collect_eog_ids() {
  for (size_t i = 0; i < n_tokens(); ++i) {
    const auto id = static_cast<TokenId>(i);
    const std::string_view text = texts_[i];
    if (contains(kEogTexts, text)) {
      eog_ids_.push_back(id);
      force_control(id);
    }
    if ((attrs_[i] & kAttrControl) && text.find("unused") != std::string_view::npos) {
      attrs_[i] |= kAttrUnused;
    }
  }
  for (TokenId id : {eos_, eot_, eom_}) {
    if (id != kNoToken) eog_ids_.push_back(id);
  }
  std::sort(eog_ids_.begin(), eog_ids_.end());
  eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
  // gpt-oss style vocabularies: "<|end|>" ends a message, not the generation.
  const TokenId end = find("<|end|>");
  const TokenId ret = find("<|return|>");
  const TokenId call = find("<|call|>");
  if (end != kNoToken && ret != kNoToken && call != kNoToken && is_eog(end) && is_eog(ret) &&
      is_eog(call)) {
    eog_ids_.erase(std::find(eog_ids_.begin(), eog_ids_.end(), end));
    attrs_[static_cast<size_t>(end)] = kAttrUserDefined;
  }
}

// Tokens matched as text before tokenization, longest first (ties by id, for determinism).
void Vocab::collect_special_tokens() {
  for (size_t i = 0; i < n_tokens(); ++i) {
    if (attrs_[i] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) {
      special_tokens_.push_back(static_cast<TokenId>(i));
    }
  }
  std::stable_sort(special_tokens_.begin(), special_tokens_.end(), [&](TokenId a, TokenId b) {
    return texts_[static_cast<size_t>(a)].size() > texts_[static_cast<size_t>(b)].size();
  });
  special_trie_ = build_special_trie(texts_, special_tokens_);
  for (const TokenId id : special_tokens_) {
    if (!(attrs_[static_cast<size_t>(id)] & (kAttrControl | kAttrUnknown))) {
      special_trie_.any_always = true;
    }
  }
}

// Per-model attributes llama.cpp sets by general.name: Phi-3 strips whitespace after most of
// its special tokens.
void Vocab::apply_model_name_fixups(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  });
  if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) return;
  auto set_rstrip = [&](TokenId id, bool on) {
    if (id == kNoToken) return;
    auto& a = attrs_[static_cast<size_t>(id)];
    a = on ? (a | kAttrRStrip) : (a & ~static_cast<uint32_t>(kAttrRStrip));
  };
  for (TokenId id : special_tokens_) set_rstrip(id, true);
  set_rstrip(find("</s>"), true);
  for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) set_rstrip(find(t), false);
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
