#include "template/jinja/pystr.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace ember::jinja::pystr {
namespace {

size_t utf8_len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 6) return 2;
  if ((c >> 4) == 14) return 3;
  if ((c >> 3) == 30) return 4;
  return 1;  // a stray byte counts as one code point
}

uint32_t decode_at(std::string_view s, size_t pos, size_t* len) {
  const auto c = static_cast<unsigned char>(s[pos]);
  size_t n = utf8_len(c);
  if (pos + n > s.size()) n = 1;
  *len = n;
  if (n == 1) return c;
  uint32_t cp = c & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) cp = (cp << 6) | (static_cast<unsigned char>(s[pos + i]) & 0x3F);
  return cp;
}

// Python's str.isspace() code points.
bool space_codepoint(uint32_t cp) {
  return (cp >= 9 && cp <= 13) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

bool in_chars(std::string_view chars, std::string_view s, size_t pos, size_t* len) {
  size_t n = 0;
  const uint32_t cp = decode_at(s, pos, &n);
  *len = n;
  for (size_t i = 0; i < chars.size();) {
    size_t m = 0;
    if (decode_at(chars, i, &m) == cp) return true;
    i += m;
  }
  return false;
}

char ascii_upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; }
char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }
bool ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

std::vector<size_t> codepoint_offsets(std::string_view s) {
  std::vector<size_t> out;
  out.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); i += utf8_len(static_cast<unsigned char>(s[i]))) out.push_back(i);
  out.push_back(s.size());
  if (out.size() >= 2 && out[out.size() - 2] > s.size()) out.erase(out.end() - 2);
  return out;
}

size_t codepoint_count(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool is_ascii(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0x80) return false;
  return true;
}

bool is_space(std::string_view s, size_t pos, size_t* len) { return space_codepoint(decode_at(s, pos, len)); }

void strip_range(std::string_view s, std::string_view chars, bool left, bool right, size_t* begin, size_t* end) {
  auto strippable = [&](size_t pos, size_t* len) { return chars.empty() ? is_space(s, pos, len) : in_chars(chars, s, pos, len); };
  size_t b = 0, e = s.size(), len = 0;
  if (left)
    while (b < e && strippable(b, &len)) b += len;
  if (right) {
    while (e > b) {
      size_t start = e - 1;
      while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
      if (!strippable(start, &len)) break;
      e = start;
    }
  }
  *begin = b;
  *end = e;
}

std::vector<std::string> split(std::string_view s, std::string_view sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (!sep.empty()) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      const size_t hit = s.find(sep, pos);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, hit - pos));
      pos = hit + sep.size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  size_t i = 0, len = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s, i, &len)) i += len;
    if (i >= s.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      size_t b = 0, e = 0;
      strip_range(s.substr(i), "", false, true, &b, &e);
      out.emplace_back(s.substr(i, e));
      return out;
    }
    const size_t start = i;
    while (i < s.size() && !is_space(s, i, &len)) i += len;
    out.emplace_back(s.substr(start, i - start));
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, std::string_view sep, int64_t maxsplit) {
  if (maxsplit < 0 || sep.empty()) return split(s, sep, maxsplit);
  std::vector<std::string> out;
  size_t end = s.size();
  while (static_cast<int64_t>(out.size()) < maxsplit) {
    const size_t hit = end >= sep.size() ? s.rfind(sep, end - sep.size()) : std::string_view::npos;
    if (hit == std::string_view::npos) break;
    out.insert(out.begin(), std::string(s.substr(hit + sep.size(), end - hit - sep.size())));
    end = hit;
  }
  out.insert(out.begin(), std::string(s.substr(0, end)));
  return out;
}

std::vector<std::string> splitlines(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\n' && s[i] != '\r') continue;
    out.emplace_back(s.substr(start, i - start));
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
    start = i + 1;
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` around every code point
    const std::vector<size_t> cps = codepoint_offsets(s);
    for (size_t k = 0; k + 1 < cps.size(); ++k) {
      if (count < 0 || static_cast<int64_t>(k) < count) out += to;
      out += s.substr(cps[k], cps[k + 1] - cps[k]);
    }
    if (count < 0 || static_cast<int64_t>(cps.size()) - 1 < count) out += to;
    return out;
  }
  size_t pos = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out += s.substr(pos, hit - pos);
    out += to;
    pos = hit + from.size();
  }
  out += s.substr(pos);
  return out;
}

// Case mapping is ASCII only: role names, tags and keywords are what templates change the
// case of; non-ASCII letters pass through unchanged (Python would map them).
std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_upper(c);
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

std::string title(std::string_view s) {
  std::string out(s);
  bool prev_cased = false;
  for (char& c : out) {
    c = prev_cased ? ascii_lower(c) : ascii_upper(c);
    prev_cased = ascii_alpha(c);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out = lower(s);
  if (!out.empty()) out[0] = ascii_upper(out[0]);
  return out;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, end);  // shortest round-trip digits: "-1.2345e+02"
  const size_t e = sci.find('e');
  const int exponent = std::stoi(sci.substr(e + 1));
  std::string digits;
  const bool negative = sci[0] == '-';
  for (size_t i = negative ? 1 : 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {  // Python's repr switches to exponent form here
    out += digits.substr(0, 1);
    if (digits.size() > 1) out.append(".").append(digits, 1);
    std::snprintf(buf, sizeof buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + buf;
  }
  if (exponent < 0) return out + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  const auto int_digits = static_cast<size_t>(exponent + 1);
  if (digits.size() <= int_digits) return out + digits + std::string(int_digits - digits.size(), '0') + ".0";
  return out + digits.substr(0, int_digits) + "." + digits.substr(int_digits);
}

std::string string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const char quote = has_single && s.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + quote;
}

}  // namespace ember::jinja::pystr
