#include "template/jinja/lexer.h"

#include <cstring>

#include "template/jinja/error.h"
#include "util/utf8.h"

namespace ember::jinja {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// jinja2 normalises every line ending to "\n" and drops one trailing newline
// (keep_trailing_newline=False) before it lexes.
std::string normalise(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalise(source)) {}

  std::vector<Token> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      const size_t start = find_tag(pos_);
      std::string text = src_.substr(pos_, start - pos_);
      if (start == src_.size()) {
        emit_text(std::move(text), pos_);
        break;
      }
      const char kind = src_[start + 1];  // '{', '%' or '#'
      const char mod = start + 2 < src_.size() ? src_[start + 2] : 0;
      if (mod == '-') {
        while (!text.empty() && is_ws(text.back())) text.pop_back();
      } else if (mod != '+' && kind != '{') {
        lstrip_line(text, line_starting);
      }
      emit_text(std::move(text), pos_);
      pos_ = start + 2 + (mod == '-' || mod == '+');
      const size_t consumed_from = pos_;
      if (kind == '#') skip_comment(start);
      else if (kind == '%' && is_raw()) raw_block(start);
      else tag(kind, start);
      line_starting = pos_ > consumed_from && src_[pos_ - 1] == '\n';
    }
    tokens_.push_back({Token::Kind::End, "", line_of(src_.size()), 1});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i)
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return src_.size();
  }

  // lstrip_blocks: spaces and tabs between the start of the line and the tag go.
  static void lstrip_line(std::string& text, bool line_starting) {
    const size_t nl = text.rfind('\n');
    const size_t from = nl == std::string::npos ? 0 : nl + 1;
    if (nl == std::string::npos && !line_starting) return;
    for (size_t i = from; i < text.size(); ++i)
      if (!is_ws(text[i])) return;
    text.resize(from);
  }

  void emit_text(std::string text, size_t at) {
    if (!text.empty()) tokens_.push_back({Token::Kind::Text, std::move(text), line_of(at), col_of(at)});
  }

  // After a block or comment: `-` eats all following whitespace, plain trim_blocks one "\n".
  void after_block_end(bool minus, bool plus) {
    if (minus) {
      while (pos_ < src_.size() && is_ws(src_[pos_])) ++pos_;
    } else if (!plus && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
  }

  void skip_comment(size_t start) {
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) error_at(start, "unterminated comment");
    const bool minus = end > pos_ && src_[end - 1] == '-';
    const bool plus = end > pos_ && src_[end - 1] == '+';
    pos_ = end + 2;
    after_block_end(minus, plus);
  }

  bool is_raw() const {
    size_t i = pos_;
    while (i < src_.size() && is_ws(src_[i])) ++i;
    if (src_.compare(i, 3, "raw") != 0) return false;
    i += 3;
    while (i < src_.size() && is_ws(src_[i])) ++i;
    return src_.compare(i, 2, "%}") == 0 || src_.compare(i, 3, "-%}") == 0;
  }

  void raw_block(size_t start) {
    const size_t open_end = src_.find("%}", pos_);
    const bool minus = src_[open_end - 1] == '-';
    pos_ = open_end + 2;
    after_block_end(minus, false);
    for (size_t i = src_.find("{%", pos_); i != std::string::npos; i = src_.find("{%", i + 2)) {
      size_t j = i + 2;
      const char mod = j < src_.size() ? src_[j] : 0;
      if (mod == '-' || mod == '+') ++j;
      while (j < src_.size() && is_ws(src_[j])) ++j;
      if (src_.compare(j, 6, "endraw") != 0) continue;
      const size_t close = src_.find("%}", j);
      if (close == std::string::npos) break;
      std::string text = src_.substr(pos_, i - pos_);
      if (mod == '-')
        while (!text.empty() && is_ws(text.back())) text.pop_back();
      emit_text(std::move(text), pos_);
      pos_ = close + 2;
      after_block_end(src_[close - 1] == '-', src_[close - 1] == '+');
      return;
    }
    error_at(start, "unterminated raw block");
  }

  // The tokens inside {{ ... }} or {% ... %}, up to the end marker at bracket depth 0.
  void tag(char kind, size_t start) {
    const bool block = kind == '%';
    tokens_.push_back({block ? Token::Kind::BlockBegin : Token::Kind::VarBegin, "", line_of(start), col_of(start)});
    const char* close = block ? "%}" : "}}";
    int depth = 0;
    while (true) {
      while (pos_ < src_.size() && is_ws(src_[pos_])) ++pos_;
      if (pos_ >= src_.size()) error_at(start, block ? "unterminated block tag '{%'" : "unterminated expression '{{'");
      if (depth == 0) {
        const bool mod = (src_[pos_] == '-' || src_[pos_] == '+') && src_.compare(pos_ + 1, 2, close) == 0;
        if (mod || src_.compare(pos_, 2, close) == 0) {
          tokens_.push_back({block ? Token::Kind::BlockEnd : Token::Kind::VarEnd, "", line_of(pos_), col_of(pos_)});
          const char m = mod ? src_[pos_] : 0;
          pos_ += mod ? 3 : 2;
          if (block) after_block_end(m == '-', m == '+');
          else if (m == '-')
            while (pos_ < src_.size() && is_ws(src_[pos_])) ++pos_;
          return;
        }
      }
      lex_one(depth);
    }
  }

  void lex_one(int& depth) {
    const size_t at = pos_;
    const char c = src_[pos_];
    if (c == '\'' || c == '"') return string_literal(c);
    if (is_digit(c)) return number();
    if (is_name_start(c)) {
      while (pos_ < src_.size() && (is_name_start(src_[pos_]) || is_digit(src_[pos_]))) ++pos_;
      tokens_.push_back({Token::Kind::Name, src_.substr(at, pos_ - at), line_of(at), col_of(at)});
      return;
    }
    static const char* const two[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char* op : two)
      if (src_.compare(pos_, 2, op) == 0) {
        pos_ += 2;
        tokens_.push_back({Token::Kind::Op, op, line_of(at), col_of(at)});
        return;
      }
    if (!std::strchr("+-*/%~<>=()[]{},.:|", c)) error_at(at, std::string("unexpected character '") + c + "'");
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    ++pos_;
    tokens_.push_back({Token::Kind::Op, std::string(1, c), line_of(at), col_of(at)});
  }

  void number() {
    const size_t at = pos_;
    bool is_float = false;
    while (pos_ < src_.size() && (is_digit(src_[pos_]) || src_[pos_] == '_')) ++pos_;
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && is_digit(src_[pos_ + 1])) {
      is_float = true;
      ++pos_;
      while (pos_ < src_.size() && (is_digit(src_[pos_]) || src_[pos_] == '_')) ++pos_;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      size_t j = pos_ + 1;
      if (j < src_.size() && (src_[j] == '+' || src_[j] == '-')) ++j;
      if (j < src_.size() && is_digit(src_[j])) {
        is_float = true;
        pos_ = j;
        while (pos_ < src_.size() && is_digit(src_[pos_])) ++pos_;
      }
    }
    std::string text;
    for (size_t i = at; i < pos_; ++i)
      if (src_[i] != '_') text += src_[i];
    tokens_.push_back({is_float ? Token::Kind::Float : Token::Kind::Int, text, line_of(at), col_of(at)});
  }

  // Python's unicode-escape rules, as jinja2 decodes string literals.
  void string_literal(char quote) {
    const size_t at = pos_++;
    std::string out;
    while (true) {
      if (pos_ >= src_.size()) error_at(at, "unterminated string");
      const char c = src_[pos_++];
      if (c == quote) break;
      if (c != '\\' || pos_ >= src_.size()) {
        out += c;
        continue;
      }
      const char e = src_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '\n': break;
        case 'x': append_utf8(out, hex(2, at)); break;
        case 'u': append_utf8(out, hex(4, at)); break;
        case 'U': append_utf8(out, hex(8, at)); break;
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++k)
              v = v * 8 + static_cast<uint32_t>(src_[pos_++] - '0');
            append_utf8(out, v);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    tokens_.push_back({Token::Kind::String, std::move(out), line_of(at), col_of(at)});
  }

  uint32_t hex(int digits, size_t at) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (pos_ >= src_.size()) error_at(at, "truncated escape in string");
      const char c = src_[pos_++];
      const int d = is_digit(c) ? c - '0' : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10 : -1;
      if (d < 0) error_at(at, "bad escape in string");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    if (v > 0x10FFFF) error_at(at, "bad escape in string");
    return v;
  }

  int line_of(size_t at) {
    while (line_pos_ < at && line_pos_ < src_.size()) {
      if (src_[line_pos_] == '\n') {
        ++line_;
        line_start_ = line_pos_ + 1;
      }
      ++line_pos_;
    }
    return line_;
  }
  int col_of(size_t at) { return static_cast<int>(at - std::min(at, line_start_)) + 1; }

  [[noreturn]] void error_at(size_t at, const std::string& what) {
    const int line = line_of(at);
    fail("line {}:{}: {}", line, col_of(at), what);
  }

  std::string src_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
  size_t line_pos_ = 0, line_start_ = 0;
  int line_ = 1;
};

}  // namespace

std::vector<Token> lex(std::string_view source) {
  if (source.size() > kMaxTemplateBytes) fail("the template is longer than {} bytes", kMaxTemplateBytes);
  return Lexer(source).run();
}

}  // namespace ember::jinja
