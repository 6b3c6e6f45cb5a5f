#include "grammar/gbnf_parser.h"

#include <string>

#include "grammar/grammar_builder.h"
#include "util/error.h"

namespace ember::grammar {
namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  Grammar parse(std::string_view root) {
    if (text_.size() > kMaxGrammarBytes) fail(ErrorKind::InvalidArgument, "grammar: over {} bytes", kMaxGrammarBytes);
    skip_space(true);
    while (pos_ < text_.size()) parse_rule();
    return builder_.finish(root);
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    fail(ErrorKind::InvalidArgument, "grammar line {} column {}: {}", line, column, what);
  }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool at_end() const { return pos_ >= text_.size(); }

  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == '#') {
        while (!at_end() && peek() != '\n' && peek() != '\r') ++pos_;
      } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view name() {
    const size_t start = pos_;
    while (is_word_char(peek())) ++pos_;
    if (pos_ == start) error("expected a rule name");
    return text_.substr(start, pos_ - start);
  }

  size_t integer() {
    size_t v = 0, start = pos_;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<size_t>(peek() - '0');
      if (v > kMaxRepetition) error("repetition count over " + std::to_string(kMaxRepetition));
      ++pos_;
    }
    if (pos_ == start) error("expected an integer");
    return v;
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) error("expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    return v;
  }

  uint32_t utf8_char() {
    const auto b0 = static_cast<uint8_t>(peek());
    const int n = b0 < 0x80 ? 1 : (b0 >> 5) == 6 ? 2 : (b0 >> 4) == 14 ? 3 : (b0 >> 3) == 30 ? 4 : 0;
    if (n == 0) error("invalid UTF-8");
    uint32_t cp = n == 1 ? b0 : b0 & (0x7F >> n);
    ++pos_;
    for (int i = 1; i < n; ++i) {
      const auto b = static_cast<uint8_t>(peek());
      if ((b & 0xC0) != 0x80) error("invalid UTF-8");
      cp = (cp << 6) | (b & 0x3F);
      ++pos_;
    }
    return cp;
  }

  // One character of a literal or class, escapes decoded.
  uint32_t character() {
    if (at_end()) error("unexpected end of grammar");
    if (peek() != '\\') return utf8_char();
    ++pos_;
    const char c = peek();
    ++pos_;
    switch (c) {
      case 'x': return checked(hex(2));
      case 'u': return checked(hex(4));
      case 'U': return checked(hex(8));
      case 't': return '\t';
      case 'n': return '\n';
      case 'r': return '\r';
      case '\\': case '"': case '[': case ']': case '-': return static_cast<uint8_t>(c);
      default: --pos_; error(std::string("unknown escape \\") + c);
    }
  }
  uint32_t checked(uint32_t cp) {
    if (cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) error("not a Unicode scalar value");
    return cp;
  }

  void literal(Sequence& seq) {
    ++pos_;  // "
    std::string bytes;
    while (peek() != '"') {
      if (at_end()) error("unterminated string literal");
      bytes += encode_utf8(character());
    }
    ++pos_;
    builder_.append_literal(seq, bytes);
  }

  void char_class(Sequence& seq) {
    ++pos_;  // [
    const bool negate = peek() == '^';
    if (negate) ++pos_;
    std::vector<CodePointRange> ranges;
    while (peek() != ']') {
      if (at_end()) error("unterminated character class");
      const uint32_t lo = character();
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        hi = character();
        if (hi < lo) error("character range with its end before its start");
      }
      ranges.emplace_back(lo, hi);
    }
    ++pos_;
    if (ranges.empty() && !negate) error("empty character class");
    builder_.append_class(seq, std::move(ranges), negate);
  }

  void repetition(Sequence& seq, size_t last, size_t min, size_t max) {
    if (last == SIZE_MAX) error("a repetition operator with nothing before it");
    builder_.repeat(seq, last, min, max);
  }

  void braces(Sequence& seq, size_t last, bool nested) {
    ++pos_;
    skip_space(nested);
    const size_t min = integer();
    size_t max = min;
    skip_space(nested);
    if (peek() == ',') {
      ++pos_;
      skip_space(nested);
      max = peek() >= '0' && peek() <= '9' ? integer() : GrammarBuilder::kUnbounded;
      skip_space(nested);
    }
    if (peek() != '}') error("expected '}'");
    ++pos_;
    repetition(seq, last, min, max);
  }

  // Elements up to '|', ')' or (at the top level) the end of the line.
  Sequence sequence(std::string_view rule_name, bool nested) {
    Sequence seq;
    size_t last = SIZE_MAX;  // where the last symbol starts, for a repetition
    while (!at_end()) {
      const char c = peek();
      const size_t here = seq.size();
      if (c == '"') literal(seq);
      else if (c == '[') char_class(seq);
      else if (c == '.') { ++pos_; builder_.append_class(seq, {{0, kMaxCodePoint}}, false); }
      else if (c == '(') group(seq, rule_name);
      else if (c == '<' || c == '!') error("token references are not supported (grammars match bytes)");
      else if (is_word_char(c)) seq.push_back(Element{ElementKind::Rule, builder_.rule(name())});
      else if (c == '*' || c == '+' || c == '?') {
        ++pos_;
        repetition(seq, last, c == '+' ? 1 : 0, c == '?' ? 1 : GrammarBuilder::kUnbounded);
      } else if (c == '{') braces(seq, last, nested);
      else break;
      if (c != '*' && c != '+' && c != '?' && c != '{') last = here;
      else last = SIZE_MAX;
      skip_space(nested);
    }
    return seq;
  }

  void group(Sequence& seq, std::string_view rule_name) {
    ++pos_;
    skip_space(true);
    const uint32_t id = builder_.fresh_rule(rule_name);
    builder_.define(id, alternatives(rule_name, true));
    if (peek() != ')') error("expected ')'");
    ++pos_;
    seq.push_back(Element{ElementKind::Rule, id});
  }

  std::vector<Sequence> alternatives(std::string_view rule_name, bool nested) {
    std::vector<Sequence> alts;
    alts.push_back(sequence(rule_name, nested));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alts.push_back(sequence(rule_name, nested));
    }
    return alts;
  }

  void parse_rule() {
    const std::string rule_name(name());
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") error("expected '::='");
    pos_ += 3;
    skip_space(true);
    const uint32_t id = builder_.rule(rule_name);
    if (builder_.defined(id)) error("rule '" + rule_name + "' is defined twice");
    builder_.define(id, alternatives(rule_name, false));
    if (peek() == '\r') ++pos_;
    if (peek() == '\n') ++pos_;
    else if (!at_end()) error(std::string("unexpected '") + peek() + "'");
    skip_space(true);
  }

  std::string_view text_;
  size_t pos_ = 0;
  GrammarBuilder builder_;
};

}  // namespace

Grammar parse_gbnf(std::string_view text, std::string_view root) { return GbnfParser(text).parse(root); }

}  // namespace ember::grammar
