// `hearth tokenize -m MODEL [--ids] [--special] [--no-bos] TEXT`: the token ids of a text, as
// the model's tokenizer produces them. Only the tokenizer metadata of the GGUF file is read (a
// full model or a vocabulary-only file). By default one line per token, `id -> 'piece'`, with
// control characters and bytes that are not (yet) valid UTF-8 escaped; with --ids only the id
// list, `[1, 2, 3]`. Vocabulary facts go to stderr with --verbose, so stdout stays parseable.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace hearth::cli {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string text;
  std::string file;
  bool ids_only = false;
  bool parse_special = false;
  bool no_bos = false;
  bool verbose = false;
};

// A piece for display: valid UTF-8 as is, except control characters; other bytes as \xHH.
std::string escape_piece(std::string_view s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = utf8_char_len(s, i);
    if (len > 1) {
      out.append(s.substr(i, len));
      i += len;
      continue;
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\'':
        out += "\\'";
        break;
      default:
        if (len == 1 && c >= 0x20 && c != 0x7F) {
          out += static_cast<char>(c);
        } else {
          out += fmt::format("\\x{:02x}", c);
        }
    }
    ++i;
  }
  return out;
}

std::string read_all(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail("{}: cannot open", path);
  std::string s;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  const bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) fail("{}: read error", path);
  return s;
}

void tokenize(const TokenizeOptions& o) {
  const gguf::File file = gguf::File::open(o.model);
  const Tokenizer tok = Tokenizer::from_gguf(file);
  const std::string text = o.file.empty() ? o.text : read_all(o.file);
  const std::vector<TokenId> ids = tok.encode(text, /*add_special=*/!o.no_bos, o.parse_special);
  if (o.verbose) {
    const Vocab& v = tok.vocab();
    fmt::print(stderr, "vocab: model '{}', pre '{}', {} tokens; bos {} (add {}), eos {}\n",
               v.model(), v.pre(), v.n_tokens(), v.bos(), v.add_bos(), v.eos());
    fmt::print(stderr, "text: {} bytes -> {} tokens\n", text.size(), ids.size());
  }
  std::string out;
  if (o.ids_only) {
    out += '[';
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) out += ", ";
      out += std::to_string(ids[i]);
    }
    out += "]\n";
  } else {
    for (const TokenId id : ids) {
      out += fmt::format("{:>8} -> '{}'\n", id, escape_piece(tok.token_to_piece(id, true)));
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

void add_tokenize(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the tokens of a text");
  cmd->add_option("-m,--model", o->model, "GGUF file (a model or a vocabulary-only file)")
      ->required();
  auto* text = cmd->add_option("text", o->text, "Text to tokenize (verbatim, no escapes)");
  auto* file = cmd->add_option("-f,--file", o->file, "Read the text from a file (verbatim)");
  text->excludes(file);
  cmd->add_flag("--ids", o->ids_only, "Print only the list of ids");
  cmd->add_flag("--special", o->parse_special,
                "Parse special-token texts (e.g. <|im_start|>) into their ids");
  cmd->add_flag("--no-bos", o->no_bos, "Do not add BOS/EOS as the vocabulary asks");
  cmd->add_flag("-v,--verbose", o->verbose, "Vocabulary facts and counts on stderr");
  cmd->callback([&ctx, o, text, file] {
    if (text->count() == 0 && file->count() == 0) fail("tokenize: give a TEXT or --file");
    tokenize(*o);
    ctx.exit_code = 0;
  });
}

}  // namespace hearth::cli
