#include "chat/lexer.h"

#include <algorithm>
#include <cstring>

#include "chat/template_error.h"

namespace hearth::chat {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_name_start(unsigned char c) {
  return std::isalpha(c) || c == '_' || c >= 0x80;
}
bool is_name_char(unsigned char c) {
  return std::isalnum(c) || c == '_' || c >= 0x80;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  explicit Lexer(LexedSource& out) : out_(out), s_(out.source) {}

  void run() {
    size_t pos = 0;
    while (pos < s_.size()) {
      const size_t open = find_open(pos);
      std::string text = s_.substr(pos, (open == std::string::npos ? s_.size() : open) - pos);
      if (open == std::string::npos) {
        emit_text(std::move(text), pos);
        break;
      }
      const char kind = s_[open + 1];  // '{', '%' or '#'
      const char mod = open + 2 < s_.size() ? s_[open + 2] : '\0';
      if (mod == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (mod != '+' && kind != '{') {
        // lstrip_blocks: spaces/tabs between a line start and a block or comment tag go.
        const size_t line_start = text.rfind('\n');
        const size_t l_pos = line_start == std::string::npos ? 0 : line_start + 1;
        const bool at_line_start = l_pos > 0 || pos == 0 || s_[pos - 1] == '\n';
        if (at_line_start && l_pos < text.size() &&
            std::all_of(text.begin() + static_cast<long>(l_pos), text.end(), is_space))
          text.resize(l_pos);
      }
      emit_text(std::move(text), pos);
      size_t p = open + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      if (kind == '#') {
        pos = skip_comment(open, p);
      } else if (kind == '%' && is_raw(p)) {
        pos = raw_block(open, p);
      } else {
        pos = tag(kind, open, p);
      }
    }
    out_.tokens.push_back({Token::Kind::Eof, "", static_cast<uint32_t>(s_.size())});
  }

 private:
  [[noreturn]] void error(size_t offset, const std::string& msg) {
    throw TemplateError(TemplateError::Kind::Syntax, out_.locate(static_cast<uint32_t>(offset)),
                        msg);
  }

  size_t find_open(size_t pos) const {
    while (true) {
      const size_t p = s_.find('{', pos);
      if (p == std::string::npos || p + 1 >= s_.size()) return std::string::npos;
      const char c = s_[p + 1];
      if (c == '{' || c == '%' || c == '#') return p;
      pos = p + 1;
    }
  }

  void emit_text(std::string text, size_t offset) {
    if (text.empty()) return;
    out_.tokens.push_back({Token::Kind::Text, std::move(text), static_cast<uint32_t>(offset)});
  }

  // After a tag end: `-` strips all following whitespace; trim_blocks drops one newline after
  // block and comment tags unless `+` asked to keep it.
  size_t after_end(size_t p, char strip, bool block_like) {
    if (strip == '-') {
      while (p < s_.size() && is_space(s_[p])) ++p;
    } else if (strip != '+' && block_like && p < s_.size() && s_[p] == '\n') {
      ++p;
    }
    return p;
  }

  size_t skip_comment(size_t open, size_t p) {
    const size_t end = s_.find("#}", p);
    if (end == std::string::npos) error(open, "unclosed comment (missing '#}')");
    const char strip = end > p && (s_[end - 1] == '-' || s_[end - 1] == '+') ? s_[end - 1] : 0;
    return after_end(end + 2, strip, true);
  }

  // `{% raw %}`: is the tag starting at p (after `{%` and a modifier) the word raw?
  bool is_raw(size_t p) const {
    while (p < s_.size() && is_space(s_[p])) ++p;
    if (s_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    while (p < s_.size() && is_space(s_[p])) ++p;
    if (p < s_.size() && s_[p] == '-') ++p;
    return s_.compare(p, 2, "%}") == 0;
  }

  size_t raw_block(size_t open, size_t p) {
    const size_t close = s_.find("%}", p);
    const char strip_open = s_[close - 1] == '-' ? '-' : 0;
    size_t body_start = after_end(close + 2, strip_open, true);
    size_t search = body_start;
    while (true) {
      const size_t e = s_.find("{%", search);
      if (e == std::string::npos) error(open, "missing {% endraw %}");
      size_t q = e + 2;
      const char mod = q < s_.size() ? s_[q] : 0;
      if (mod == '-' || mod == '+') ++q;
      while (q < s_.size() && is_space(s_[q])) ++q;
      if (s_.compare(q, 6, "endraw") != 0) {
        search = e + 2;
        continue;
      }
      q += 6;
      while (q < s_.size() && is_space(s_[q])) ++q;
      char strip = 0;
      if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) strip = s_[q++];
      if (s_.compare(q, 2, "%}") != 0) error(e, "malformed {% endraw %}");
      std::string body = s_.substr(body_start, e - body_start);
      if (mod == '-')
        while (!body.empty() && is_space(body.back())) body.pop_back();
      emit_text(std::move(body), body_start);
      return after_end(q + 2, strip, true);
    }
  }

  size_t tag(char kind, size_t open, size_t p) {
    const bool var = kind == '{';
    out_.tokens.push_back({var ? Token::Kind::VarBegin : Token::Kind::BlockBegin, var ? "{{" : "{%",
                           static_cast<uint32_t>(open)});
    const char close_char = var ? '}' : '%';
    std::vector<char> brackets;
    while (true) {
      while (p < s_.size() && is_space(s_[p])) ++p;
      if (p >= s_.size())
        error(open, var ? "unclosed '{{' (missing '}}')" : "unclosed '{%' (missing '%}')");
      if (brackets.empty()) {
        char strip = 0;
        size_t q = p;
        if ((s_[q] == '-' || s_[q] == '+') && q + 2 < s_.size() && s_[q + 1] == close_char &&
            s_[q + 2] == '}') {
          strip = s_[q];
          ++q;
        }
        if (q + 1 < s_.size() && s_[q] == close_char && s_[q + 1] == '}') {
          if (strip == '+' && var) error(p, "unexpected '+'");
          out_.tokens.push_back({var ? Token::Kind::VarEnd : Token::Kind::BlockEnd,
                                 var ? "}}" : "%}", static_cast<uint32_t>(p)});
          return after_end(q + 2, strip, !var);
        }
      }
      p = expression_token(p, brackets);
    }
  }

  size_t expression_token(size_t p, std::vector<char>& brackets) {
    const unsigned char c = static_cast<unsigned char>(s_[p]);
    const uint32_t off = static_cast<uint32_t>(p);
    if (is_name_start(c)) {
      size_t e = p;
      while (e < s_.size() && is_name_char(static_cast<unsigned char>(s_[e]))) ++e;
      out_.tokens.push_back({Token::Kind::Name, s_.substr(p, e - p), off});
      return e;
    }
    if (std::isdigit(c)) return number(p);
    if (c == '\'' || c == '"') return string_literal(p);
    static const char* const two[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : two) {
      if (s_.compare(p, 2, op) == 0) {
        out_.tokens.push_back({Token::Kind::Op, op, off});
        return p + 2;
      }
    }
    if (std::strchr("+-*/%~<>=()[]{},.:|;", c) == nullptr || c == 0) {
      error(p, std::string("unexpected character '") + static_cast<char>(c) + "'");
    }
    if (c == '(' || c == '[' || c == '{') {
      brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (brackets.empty() || brackets.back() != static_cast<char>(c))
        error(p, std::string("unexpected '") + static_cast<char>(c) + "'");
      brackets.pop_back();
    }
    out_.tokens.push_back({Token::Kind::Op, std::string(1, static_cast<char>(c)), off});
    return p + 1;
  }

  size_t digits(size_t p) const {
    while (p < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[p])) ||
                             (s_[p] == '_' && p + 1 < s_.size() &&
                              std::isdigit(static_cast<unsigned char>(s_[p + 1])))))
      ++p;
    return p;
  }

  size_t number(size_t p) {
    size_t e = digits(p);
    bool is_float = false;
    // A dot after a number that follows a dot is attribute access (foo.0.1), not a float.
    const bool after_dot = !out_.tokens.empty() && out_.tokens.back().kind == Token::Kind::Op &&
                           out_.tokens.back().text == ".";
    if (!after_dot && e + 1 < s_.size() && s_[e] == '.' &&
        std::isdigit(static_cast<unsigned char>(s_[e + 1]))) {
      e = digits(e + 1);
      is_float = true;
    }
    if (!after_dot && e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t q = e + 1;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      if (q < s_.size() && std::isdigit(static_cast<unsigned char>(s_[q]))) {
        e = digits(q);
        is_float = true;
      }
    }
    std::string text = s_.substr(p, e - p);
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    out_.tokens.push_back({is_float ? Token::Kind::Float : Token::Kind::Int, std::move(text),
                           static_cast<uint32_t>(p)});
    return e;
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Python string literal escapes (Jinja decodes with unicode-escape).
  size_t string_literal(size_t p) {
    const char q = s_[p];
    std::string out;
    size_t i = p + 1;
    while (true) {
      if (i >= s_.size()) error(p, "unterminated string literal");
      const char c = s_[i];
      if (c == q) break;
      if (c != '\\') {
        out += c;
        ++i;
        continue;
      }
      if (i + 1 >= s_.size()) error(p, "unterminated string literal");
      const char e = s_[i + 1];
      i += 2;
      switch (e) {
        case '\n':
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
        case 'u':
        case 'U': {
          const int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (int k = 0; k < n; ++k) {
            const int h =
                i + static_cast<size_t>(k) < s_.size() ? hex(s_[i + static_cast<size_t>(k)]) : -1;
            if (h < 0) error(i - 2, std::string("truncated \\") + e + " escape in string literal");
            cp = cp * 16 + static_cast<uint32_t>(h);
          }
          if (cp > 0x10FFFF) error(i - 2, "illegal Unicode character in string literal");
          i += static_cast<size_t>(n);
          append_utf8(out, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && i < s_.size() && s_[i] >= '0' && s_[i] <= '7'; ++k, ++i)
              cp = cp * 8 + static_cast<uint32_t>(s_[i] - '0');
            append_utf8(out, cp);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    out_.tokens.push_back({Token::Kind::String, std::move(out), static_cast<uint32_t>(p)});
    return i + 1;
  }

  LexedSource& out_;
  const std::string& s_;
};

}  // namespace

Location LexedSource::locate(uint32_t offset) const {
  auto it = std::upper_bound(line_starts.begin(), line_starts.end(), offset);
  const size_t line = static_cast<size_t>(it - line_starts.begin());  // 1-based
  const uint32_t start = line_starts[line - 1];
  // Columns count code points, as a reader would.
  int col = 1;
  for (uint32_t i = start; i < offset && i < source.size(); ++i)
    col += (static_cast<unsigned char>(source[i]) & 0xC0) != 0x80;
  return {static_cast<int>(line), col};
}

LexedSource lex(const std::string& source) {
  LexedSource out;
  // Newlines normalised as Jinja does (\r\n and \r become \n); one trailing newline dropped
  // (keep_trailing_newline=False).
  out.source.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.source += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.source += source[i];
    }
  }
  if (!out.source.empty() && out.source.back() == '\n') out.source.pop_back();
  out.line_starts.push_back(0);
  for (size_t i = 0; i < out.source.size(); ++i)
    if (out.source[i] == '\n') out.line_starts.push_back(static_cast<uint32_t>(i + 1));
  Lexer(out).run();
  return out;
}

}  // namespace hearth::chat
