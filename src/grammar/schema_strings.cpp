#include "grammar/schema_strings.h"

#include <vector>

#include "grammar/gbnf_text.h"
#include "grammar/grammar.h"
#include "grammar/utf8_ranges.h"
#include "util/error.h"

namespace ember::grammar {
namespace {

// A set of characters as JSON string content: the plain ones as a class, and the ones
// JSON must escape (", \, \n, \t, \r) as their escapes; other control characters dropped.
std::string json_chars(std::vector<CodePointRange> ranges, bool negate) {
  ranges = normalise_ranges(std::move(ranges), negate);
  auto has = [&](uint32_t c) {
    for (const auto& [lo, hi] : ranges)
      if (c >= lo && c <= hi) return true;
    return false;
  };
  std::vector<std::string> parts;
  std::vector<CodePointRange> plain;
  for (auto [lo, hi] : ranges) {
    lo = std::max<uint32_t>(lo, 0x20);
    for (uint32_t cut : {uint32_t{'"'}, uint32_t{'\\'}}) {
      if (lo <= cut && cut <= hi) {
        if (lo < cut) plain.emplace_back(lo, cut - 1);
        lo = cut + 1;
      }
    }
    if (lo <= hi) plain.emplace_back(lo, hi);
  }
  if (!plain.empty()) parts.push_back(gbnf_class(plain));
  const std::pair<uint32_t, const char*> escaped[] = {{'"', "\\\""}, {'\\', "\\\\"}, {'\n', "\\n"}, {'\t', "\\t"}, {'\r', "\\r"}};
  for (const auto& [c, text] : escaped)
    if (has(c)) parts.push_back(gbnf_literal(text));
  if (parts.empty()) fail(ErrorKind::InvalidArgument, "json schema: a pattern's character class matches nothing JSON can hold");
  std::string out = "(";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
  return out + ")";
}

class PatternTranslator {
 public:
  explicit PatternTranslator(std::string_view p) : p_(p) {}

  std::string translate() {
    if (peek() == '^') ++i_;
    std::string out = alternation();
    if (i_ < p_.size()) unsupported(std::string("'") + p_[i_] + "'");
    return out;
  }

 private:
  [[noreturn]] void unsupported(const std::string& what) const {
    fail(ErrorKind::InvalidArgument, "json schema: pattern '{}': {} at offset {} is not supported", p_, what, i_);
  }
  char peek(size_t ahead = 0) const { return i_ + ahead < p_.size() ? p_[i_ + ahead] : '\0'; }
  bool at_end() const { return i_ >= p_.size(); }

  std::string alternation() {
    std::string out = sequence();
    if (peek() != '|') return out;
    out = "(" + out;
    while (peek() == '|') {
      ++i_;
      out += " | " + sequence();
    }
    return out + ")";
  }

  std::string sequence() {
    std::string out;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$' && i_ + 1 == p_.size()) {
        ++i_;
        break;
      }
      std::string a = atom();
      a += quantifier();
      out += (out.empty() ? "" : " ") + a;
    }
    return out.empty() ? "\"\"" : "(" + out + ")";
  }

  std::string quantifier() {
    std::string q;
    const char c = peek();
    if (c == '*' || c == '+' || c == '?') {
      ++i_;
      q = c;
    } else if (c == '{' && peek(1) >= '0' && peek(1) <= '9') {
      const size_t close = p_.find('}', i_);
      if (close == std::string_view::npos) unsupported("an unclosed '{'");
      const std::string_view inner = p_.substr(i_ + 1, close - i_ - 1);  // m, m, or m,n: digits only
      const size_t comma = inner.find(',');
      auto digits = [](std::string_view d) { return !d.empty() && d.size() <= 5 && d.find_first_not_of("0123456789") == d.npos; };
      const bool ok = comma == inner.npos ? digits(inner)
                                          : digits(inner.substr(0, comma)) &&
                                                (comma + 1 == inner.size() || digits(inner.substr(comma + 1)));
      if (!ok) unsupported("a malformed {m,n}");
      q = std::string(p_.substr(i_, close - i_ + 1));
      i_ = close + 1;
    } else {
      return "";
    }
    if (peek() == '?') ++i_;  // lazy: the same language
    else if (peek() == '+') unsupported("a possessive quantifier");
    return q;
  }

  uint32_t code_point() {
    const auto b0 = static_cast<uint8_t>(p_[i_]);
    const int n = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
    if (n == 0 || i_ + n > p_.size()) unsupported("invalid UTF-8");
    uint32_t cp = n == 1 ? b0 : b0 & (0x7F >> n);
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<uint8_t>(p_[i_ + k]) & 0x3F);
    i_ += n;
    return cp;
  }

  // An escape's characters (\d \w \s and negations; other escapes stand for themselves).
  std::vector<CodePointRange> escape(bool* negate) {
    ++i_;  // backslash
    if (at_end()) unsupported("a trailing backslash");
    const char c = p_[i_];
    *negate = c == 'D' || c == 'W' || c == 'S';
    switch (c) {
      case 'd': case 'D': ++i_; return {{'0', '9'}};
      case 'w': case 'W': ++i_; return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
      case 's': case 'S': ++i_; return {{' ', ' '}, {'\t', '\r'}};
      case 'n': ++i_; return {{'\n', '\n'}};
      case 't': ++i_; return {{'\t', '\t'}};
      case 'r': ++i_; return {{'\r', '\r'}};
      default: break;
    }
    if ((c >= '0' && c <= '9') || c == 'b' || c == 'B' || c == 'u' || c == 'x' || c == 'p' || c == 'P' || c == 'k')
      unsupported(std::string("the escape \\") + c);
    const uint32_t cp = code_point();
    return {{cp, cp}};
  }

  std::string char_class() {
    ++i_;  // [
    const bool negate = peek() == '^';
    if (negate) ++i_;
    std::vector<CodePointRange> ranges;
    bool first = true;
    while (first || peek() != ']') {
      first = false;
      if (at_end()) unsupported("an unclosed '['");
      bool neg = false;
      if (peek() == '\\') {
        auto r = escape(&neg);
        if (neg) unsupported("a negated escape inside a class");
        if (r.size() == 1 && r[0].first == r[0].second && peek() == '-' && peek(1) != ']') {
          ++i_;
          const uint32_t hi = peek() == '\\' ? escape(&neg)[0].second : code_point();
          ranges.emplace_back(r[0].first, hi);
        } else {
          ranges.insert(ranges.end(), r.begin(), r.end());
        }
        continue;
      }
      const uint32_t lo = code_point();
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && i_ + 1 < p_.size()) {
        ++i_;
        hi = peek() == '\\' ? escape(&neg)[0].second : code_point();
      }
      if (hi < lo) unsupported("a reversed range");
      ranges.emplace_back(lo, hi);
    }
    ++i_;
    return json_chars(ranges, negate);
  }

  std::string group() {
    ++i_;
    if (peek() == '?') {
      if (peek(1) != ':') unsupported("a lookaround or named group");
      i_ += 2;
    }
    std::string inner = alternation();
    if (peek() != ')') unsupported("an unclosed '('");
    ++i_;
    return "(" + inner + ")";
  }

  std::string atom() {
    const char c = peek();
    if (c == '(') return group();
    if (c == '[') return char_class();
    if (c == '.') {
      ++i_;
      return json_chars({{'\n', '\n'}}, true);
    }
    if (c == '\\') {
      bool negate = false;
      auto r = escape(&negate);
      return json_chars(r, negate);
    }
    if (c == '^' || c == '$') unsupported("an anchor inside the pattern");
    if (c == '*' || c == '+' || c == '?' || c == '{') unsupported("a quantifier with nothing before it");
    const uint32_t cp = code_point();
    return json_chars({{cp, cp}}, false);
  }

  std::string_view p_;
  size_t i_ = 0;
};

}  // namespace

std::string pattern_to_gbnf(std::string_view pattern) {
  if (pattern.size() > 4096) fail(ErrorKind::InvalidArgument, "json schema: a pattern over 4096 bytes");
  return PatternTranslator(pattern).translate();
}

std::string format_to_gbnf(std::string_view format) {
  const std::string date = R"([0-9]{4} "-" ("0" [1-9] | "1" [0-2]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]))";
  const std::string time =
      R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))";
  if (format == "date") return "(" + date + ")";
  if (format == "time") return "(" + time + ")";
  if (format == "date-time") return "(" + date + " \"T\" " + time + ")";
  if (format == "uuid")
    return R"(([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12}))";
  fail(ErrorKind::InvalidArgument, "json schema: unsupported format '{}' (supported: date, time, date-time, uuid)", format);
}

}  // namespace ember::grammar
