#include "chat/py_string.h"

#include <algorithm>

namespace hearth::chat::py {

bool is_space(uint32_t cp) {
  if (cp <= 0x7F) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

uint32_t decode(std::string_view s, size_t& i) {
  const auto c = static_cast<unsigned char>(s[i]);
  int n = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
  if (n <= 0 || i + static_cast<size_t>(n) >= s.size()) {
    ++i;
    return c;
  }
  uint32_t cp = c & (0x3F >> n);
  for (int k = 1; k <= n; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
    if ((cc & 0xC0) != 0x80) {
      ++i;
      return c;
    }
    cp = (cp << 6) | (cc & 0x3F);
  }
  i += static_cast<size_t>(n) + 1;
  return cp;
}

namespace {

std::vector<std::pair<size_t, uint32_t>> code_points(std::string_view s) {
  std::vector<std::pair<size_t, uint32_t>> cps;
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    cps.push_back({at, decode(s, i)});
  }
  return cps;
}

}  // namespace

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right) {
  std::vector<uint32_t> set;
  if (chars)
    for (size_t i = 0; i < chars->size();) set.push_back(decode(*chars, i));
  auto strip_it = [&](uint32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_space(cp);
  };
  auto cps = code_points(s);
  size_t a = 0, b = cps.size();
  if (left)
    while (a < b && strip_it(cps[a].second)) ++a;
  if (right)
    while (b > a && strip_it(cps[b - 1].second)) --b;
  const size_t from = a < cps.size() ? cps[a].first : s.size();
  const size_t to = b < cps.size() ? cps[b].first : s.size();
  return std::string(s.substr(from, to - from));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      const size_t f = s.find(*sep, pos);
      if (f == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, f - pos));
      pos = f + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  auto cps = code_points(s);
  size_t i = 0;
  while (i < cps.size()) {
    while (i < cps.size() && is_space(cps[i].second)) ++i;
    if (i == cps.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      out.emplace_back(s.substr(cps[i].first));
      // Python keeps the remainder as is, minus nothing on the right (rstrip not applied).
      return out;
    }
    const size_t start = cps[i].first;
    while (i < cps.size() && !is_space(cps[i].second)) ++i;
    const size_t end = i < cps.size() ? cps[i].first : s.size();
    out.emplace_back(s.substr(start, end - start));
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep,
                                int64_t maxsplit) {
  if (maxsplit < 0) return split(s, sep, maxsplit);
  std::vector<std::string> out;
  if (sep) {
    size_t end = s.size();
    while (static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t f = s.rfind(*sep, end - sep->size());
      if (f == std::string_view::npos) break;
      out.emplace_back(s.substr(f + sep->size(), end - f - sep->size()));
      end = f;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
  }
  auto cps = code_points(s);
  size_t i = cps.size();
  while (i > 0) {
    while (i > 0 && is_space(cps[i - 1].second)) --i;
    if (i == 0) break;
    if (static_cast<int64_t>(out.size()) == maxsplit) {
      const size_t end = i < cps.size() ? cps[i].first : s.size();
      out.emplace_back(s.substr(0, end));
      break;
    }
    const size_t end = i < cps.size() ? cps[i].first : s.size();
    while (i > 0 && !is_space(cps[i - 1].second)) --i;
    out.emplace_back(s.substr(cps[i].first, end - cps[i].first));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const uint32_t cp = decode(s, i);
    const bool br = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C ||
                    cp == 0x1D || cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!br) continue;
    size_t end = i;
    if (cp == '\r' && i < s.size() && s[i] == '\n') end = ++i;
    out.emplace_back(s.substr(start, (keepends ? end : at) - start));
    start = end;
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` between every code point (and at both ends).
    auto cps = code_points(s);
    int64_t done = 0;
    for (size_t k = 0; k <= cps.size(); ++k) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      if (k < cps.size()) {
        const size_t end = k + 1 < cps.size() ? cps[k + 1].first : s.size();
        out += s.substr(cps[k].first, end - cps[k].first);
      }
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t f = s.find(from, pos);
    if (f == std::string_view::npos) break;
    out += s.substr(pos, f - pos);
    out += to;
    pos = f + from.size();
    ++done;
  }
  out += s.substr(pos);
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  return out;
}

namespace {
bool is_alpha_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}
}  // namespace

std::string title(std::string_view s) {
  std::string out(s);
  bool prev_cased = false;
  for (char& ch : out) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 'a' && c <= 'z') {
      if (!prev_cased) ch = static_cast<char>(c - 32);
    } else if (c >= 'A' && c <= 'Z') {
      if (prev_cased) ch = static_cast<char>(c + 32);
    }
    prev_cased = is_alpha_byte(c);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out = lower(s);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

bool is_lower(std::string_view s) {
  bool cased = false;
  for (char c : s) {
    if (c >= 'A' && c <= 'Z') return false;
    cased = cased || (c >= 'a' && c <= 'z');
  }
  return cased;
}

bool is_upper(std::string_view s) {
  bool cased = false;
  for (char c : s) {
    if (c >= 'a' && c <= 'z') return false;
    cased = cased || (c >= 'A' && c <= 'Z');
  }
  return cased;
}

size_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return code_points(s).size() + 1;
  size_t n = 0;
  for (size_t pos = s.find(sub); pos != std::string_view::npos; pos = s.find(sub, pos + sub.size()))
    ++n;
  return n;
}

}  // namespace hearth::chat::py
