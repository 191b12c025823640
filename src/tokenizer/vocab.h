// A tokenizer vocabulary: token texts, scores, types and special tokens, as stored in a GGUF
// file's `tokenizer.ggml.*` metadata, with the defaults and fix-ups llama.cpp applies when it
// loads one (llama-vocab.cpp). The vocabulary is pure data; the algorithms that use it (SPM now,
// BPE later) live beside it (spm.h, tokenizer.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hearth {

namespace gguf {
class File;
}

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;  // "no such token"

// `tokenizer.ggml.token_type` values.
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

// Per-token attribute bits (llama.cpp's llama_token_attr). Derived from the token type, then
// adjusted by the loader's fix-ups (e.g. end-of-generation texts become Control).
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrLStrip = 1u << 7,  // when parsed as special text: whitespace before it is dropped
  kAttrRStrip = 1u << 8,  // when parsed as special text: whitespace after it is dropped
};

// The tokenization algorithm named by `tokenizer.ggml.model`.
enum class VocabType {
  Spm,   // "llama": SentencePiece-style BPE over scores, byte fallback
  Bpe,   // "gpt2": byte-level BPE with merges (bpe.h)
  Wpm,   // "bert": WordPiece (wpm.h)
  Ugm,   // "t5": SentencePiece unigram (not implemented)
  Rwkv,  // "rwkv" (not implemented)
};

// The raw inputs of a vocabulary; what from_gguf reads, or what a unit test writes by hand.
// Optional fields left empty take llama.cpp's defaults for the model type.
struct VocabData {
  std::string model = "llama";  // tokenizer.ggml.model
  std::string pre;              // tokenizer.ggml.pre (informational for SPM)
  std::string name;             // general.name (llama.cpp keys a few attribute fix-ups on it)
  std::vector<std::string> tokens;
  std::vector<float> scores;        // empty: all 0
  std::vector<int32_t> types;       // TokenType values; empty: all Normal
  std::vector<std::string> merges;  // tokenizer.ggml.merges ("left right"), BPE only

  // Special token ids as stored: nullopt = key absent (the model default applies); a negative
  // value or 4294967295 (u32 -1) = explicitly none; anything else must be a valid id.
  std::optional<int64_t> bos_id, eos_id, unk_id, sep_id, pad_id, eot_id, eom_id;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
};

class Vocab {
 public:
  // Reads tokenizer.ggml.{model,pre,tokens,scores,token_type,merges,*_token_id,add_*} and
  // general.name.
  // Throws Error (naming the file and key) when a key is missing, mistyped or inconsistent.
  static Vocab from_gguf(const gguf::File& file);
  // Validates `data` and builds the lookup tables. Throws Error on inconsistent input:
  // arrays of different lengths, an empty token list, a special id out of range, duplicate
  // token texts, a BYTE token whose text is not <0xHH>, an unknown model name, add_bos/add_eos
  // requested without a BOS/EOS token. `source` prefixes error messages.
  static Vocab build(VocabData data, const std::string& source = "vocab");

  VocabType type() const { return type_; }
  const std::string& model() const { return model_; }  // tokenizer.ggml.model as stored
  const std::string& pre() const { return pre_; }

  size_t n_tokens() const { return texts_.size(); }
  bool valid_id(TokenId id) const { return id >= 0 && static_cast<size_t>(id) < texts_.size(); }

  // Per-token data. `id` must be valid (Error otherwise).
  const std::string& text(TokenId id) const { return texts_[checked(id)]; }
  float score(TokenId id) const { return scores_[checked(id)]; }
  TokenType token_type(TokenId id) const { return types_[checked(id)]; }
  uint32_t attr(TokenId id) const { return attrs_[checked(id)]; }

  bool is_normal(TokenId id) const { return attr(id) & kAttrNormal; }
  bool is_unknown(TokenId id) const { return attr(id) & kAttrUnknown; }
  bool is_control(TokenId id) const { return attr(id) & kAttrControl; }
  bool is_user_defined(TokenId id) const { return attr(id) & kAttrUserDefined; }
  bool is_unused(TokenId id) const { return attr(id) & kAttrUnused; }
  bool is_byte(TokenId id) const { return attr(id) & kAttrByte; }
  // End of generation: EOS, EOT, EOM and the tokens llama.cpp recognizes by text
  // (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, ...). Never BOS (unless a
  // vocabulary makes BOS and EOS the same token). False for invalid ids.
  bool is_eog(TokenId id) const;
  const std::vector<TokenId>& eog_ids() const { return eog_ids_; }

  // Text -> id (exact match over all tokens, any type); kNoToken when absent.
  TokenId find(std::string_view text) const;
  // The token for a raw byte: `<0xAB>`, else a token whose text is that single byte (for
  // byte-level BPE: the byte's GPT-2 byte-level character, see byte_level.h); kNoToken when
  // the vocabulary has neither.
  TokenId byte_to_token(uint8_t byte) const { return byte_tokens_[byte]; }
  // The byte a BYTE token stands for; -1 for other tokens.
  int token_to_byte(TokenId id) const;

  // Special token ids; kNoToken when the vocabulary has none.
  TokenId bos() const { return bos_; }
  TokenId eos() const { return eos_; }
  TokenId unk() const { return unk_; }
  TokenId sep() const { return sep_; }
  TokenId pad() const { return pad_; }
  TokenId eot() const { return eot_; }
  TokenId eom() const { return eom_; }

  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool add_space_prefix() const { return add_space_prefix_; }

  // BPE merges as stored ("left right", rank = index); empty for other model types.
  const std::vector<std::string>& merges() const { return merges_; }

  // Tokens whose text is matched in the input before tokenization (CONTROL, USER_DEFINED and
  // UNKNOWN tokens), longest text first, ties by id.
  const std::vector<TokenId>& special_tokens() const { return special_tokens_; }

  // The texts of special_tokens() as a byte trie, so that one pass over a text finds which of
  // them occur in it (split_special_tokens). Node 0 is the root; a node's `special` is the index
  // into special_tokens() of the token whose text ends there, or -1.
  struct SpecialTrie {
    struct Node {
      uint32_t first_edge = 0;
      uint32_t n_edges = 0;
      int32_t special = -1;
    };
    struct Edge {
      uint8_t byte = 0;
      uint32_t node = 0;
    };
    std::vector<Node> nodes;
    std::vector<Edge> edges;           // each node's edges are contiguous and sorted by byte
    std::array<uint32_t, 256> root{};  // the root's children by byte (0: none)
    bool any_always = false;  // some special token splits without parse_special (USER_DEFINED)

    // The child of `node` along `byte`, or 0 when there is none.
    uint32_t child(uint32_t node, uint8_t byte) const;
  };
  const SpecialTrie& special_trie() const { return special_trie_; }
  size_t max_token_len() const { return max_token_len_; }

 private:
  size_t checked(TokenId id) const;

  // The steps of build(), in order (see vocab.cpp).
  void index_tokens(VocabData& data, const std::string& source);
  void fill_byte_tokens();
  void resolve_special_ids(const VocabData& data, const std::string& source);
  void detect_eot_eom();
  void collect_eog_ids();
  void collect_special_tokens();
  void apply_model_name_fixups(std::string name);
  void force_control(TokenId id);

  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  VocabType type_ = VocabType::Spm;
  std::string model_;
  std::string pre_;
  std::vector<std::string> texts_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  std::vector<uint32_t> attrs_;
  std::vector<int16_t> byte_of_token_;  // per token: its byte for BYTE tokens, else -1
  std::unordered_map<std::string, TokenId, TextHash, std::equal_to<>> ids_;
  std::array<TokenId, 256> byte_tokens_{};
  std::vector<std::string> merges_;
  std::vector<TokenId> special_tokens_;
  SpecialTrie special_trie_;
  std::vector<TokenId> eog_ids_;
  size_t max_token_len_ = 0;

  TokenId bos_ = kNoToken, eos_ = kNoToken, unk_ = kNoToken, sep_ = kNoToken, pad_ = kNoToken;
  TokenId eot_ = kNoToken, eom_ = kNoToken;
  bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false;
};

}  // namespace hearth
