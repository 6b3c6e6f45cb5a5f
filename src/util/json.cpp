#include "util/json.h"

#include <fmt/format.h>

#include "util/utf8.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "util/error.h"

namespace ember::json {

namespace {

constexpr int kMaxDepth = 256;

const char* kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::Null: return "null";
    case Value::Kind::Bool: return "a boolean";
    case Value::Kind::Number: return "a number";
    case Value::Kind::String: return "a string";
    case Value::Kind::Array: return "an array";
    case Value::Kind::Object: return "an object";
  }
  return "?";
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : t_(text), src_(source) {}

  Value document() {
    Value v = value(0);
    ws();
    if (p_ != t_.size()) error("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void error(std::string_view what) const {
    fail(ErrorKind::Format, "{}: JSON {} at byte {}", src_, what, p_);
  }
  void ws() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r')) ++p_;
  }
  bool literal(std::string_view word) {
    if (t_.substr(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }

  Value value(int depth) {
    if (depth > kMaxDepth) error("nesting too deep");
    ws();
    if (p_ >= t_.size()) error("ends where a value was expected");
    const char c = t_[p_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Value::make_string(string());
    if (literal("true")) return Value::make_bool(true);
    if (literal("false")) return Value::make_bool(false);
    if (literal("null")) return Value::make_null();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    error("has an unexpected character");
  }

  Value object(int depth) {
    ++p_;  // {
    std::vector<std::pair<std::string, Value>> members;
    ws();
    if (p_ < t_.size() && t_[p_] == '}') {
      ++p_;
      return Value::make_object(std::move(members));
    }
    for (;;) {
      ws();
      if (p_ >= t_.size() || t_[p_] != '"') error("expects a string key");
      std::string key = string();
      ws();
      if (p_ >= t_.size() || t_[p_] != ':') error("expects ':' after a key");
      ++p_;
      Value v = value(depth + 1);
      members.emplace_back(std::move(key), std::move(v));
      ws();
      if (p_ < t_.size() && t_[p_] == ',') {
        ++p_;
        continue;
      }
      if (p_ < t_.size() && t_[p_] == '}') {
        ++p_;
        return Value::make_object(std::move(members));
      }
      error("expects ',' or '}' in an object");
    }
  }

  Value array(int depth) {
    ++p_;  // [
    std::vector<Value> items;
    ws();
    if (p_ < t_.size() && t_[p_] == ']') {
      ++p_;
      return Value::make_array(std::move(items));
    }
    for (;;) {
      items.push_back(value(depth + 1));
      ws();
      if (p_ < t_.size() && t_[p_] == ',') {
        ++p_;
        continue;
      }
      if (p_ < t_.size() && t_[p_] == ']') {
        ++p_;
        return Value::make_array(std::move(items));
      }
      error("expects ',' or ']' in an array");
    }
  }

  unsigned hex4() {
    if (t_.size() - p_ < 4) error("has a short \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = t_[p_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f') v |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v |= static_cast<unsigned>(h - 'A' + 10);
      else error("has a bad \\u escape");
    }
    return v;
  }

  std::string string() {
    ++p_;  // opening quote
    std::string out;
    for (;;) {
      if (p_ >= t_.size()) error("has an unterminated string");
      const char c = t_[p_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) error("has a control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p_ >= t_.size()) error("has an unterminated escape");
      const char e = t_[p_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // high surrogate: a low one must follow
            if (t_.substr(p_, 2) != "\\u") error("has an unpaired surrogate");
            p_ += 2;
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) error("has an unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            error("has an unpaired surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: error("has an unknown escape");
      }
    }
  }

  Value number() {
    const size_t start = p_;
    bool is_int = true;
    if (t_[p_] == '-') ++p_;
    auto digits = [&] {
      const size_t d = p_;
      while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
      if (p_ == d) error("has a malformed number");
    };
    digits();
    if (p_ < t_.size() && t_[p_] == '.') {
      ++p_;
      is_int = false;
      digits();
    }
    if (p_ < t_.size() && (t_[p_] == 'e' || t_[p_] == 'E')) {
      ++p_;
      is_int = false;
      if (p_ < t_.size() && (t_[p_] == '+' || t_[p_] == '-')) ++p_;
      digits();
    }
    const std::string text(t_.substr(start, p_ - start));
    const double d = std::strtod(text.c_str(), nullptr);
    int64_t i = 0;
    if (is_int) {
      errno = 0;
      const long long v = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) is_int = false;
      i = v;
    }
    return Value::make_number(d, is_int, i);
  }

  std::string_view t_;
  std::string_view src_;
  size_t p_ = 0;
};

}  // namespace

Value Value::make_bool(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.b_ = b;
  return v;
}
Value Value::make_number(double d, bool is_int, int64_t i) {
  Value v;
  v.kind_ = Kind::Number;
  v.d_ = d;
  v.is_int_ = is_int;
  v.i_ = i;
  return v;
}
Value Value::make_string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.s_ = std::move(s);
  return v;
}
Value Value::make_array(std::vector<Value> a) {
  Value v;
  v.kind_ = Kind::Array;
  v.a_ = std::move(a);
  return v;
}
Value Value::make_object(std::vector<std::pair<std::string, Value>> o) {
  Value v;
  v.kind_ = Kind::Object;
  v.o_ = std::move(o);
  return v;
}

bool Value::as_bool(std::string_view what) const {
  if (kind_ != Kind::Bool) fail(ErrorKind::Format, "{} should be a boolean, is {}", what, kind_name(kind_));
  return b_;
}
double Value::as_double(std::string_view what) const {
  if (kind_ != Kind::Number) fail(ErrorKind::Format, "{} should be a number, is {}", what, kind_name(kind_));
  return d_;
}
int64_t Value::as_int(std::string_view what) const {
  if (!is_integer()) fail(ErrorKind::Format, "{} should be an integer, is {}", what, kind_name(kind_));
  return i_;
}
const std::string& Value::as_string(std::string_view what) const {
  if (kind_ != Kind::String) fail(ErrorKind::Format, "{} should be a string, is {}", what, kind_name(kind_));
  return s_;
}
const std::vector<Value>& Value::as_array(std::string_view what) const {
  if (kind_ != Kind::Array) fail(ErrorKind::Format, "{} should be an array, is {}", what, kind_name(kind_));
  return a_;
}
const std::vector<std::pair<std::string, Value>>& Value::as_object(std::string_view what) const {
  if (kind_ != Kind::Object) fail(ErrorKind::Format, "{} should be an object, is {}", what, kind_name(kind_));
  return o_;
}

const Value* Value::find(std::string_view key) const {
  if (kind_ != Kind::Object) return nullptr;
  for (const auto& [k, v] : o_)
    if (k == key) return &v;
  return nullptr;
}

const Value& Value::at(std::string_view key) const {
  const Value* v = find(key);
  if (!v) fail(ErrorKind::Format, "missing key \"{}\"", key);
  return *v;
}

Value parse(std::string_view text, std::string_view source) { return Parser(text, source).document(); }

std::string quote(std::string_view bytes) {
  std::string out = "\"";
  out.reserve(bytes.size() + 2);
  for (size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    const size_t n = utf8_valid_length(bytes, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) out += fmt::format("\\u{:04x}", c);
        else out.append(bytes.substr(i, n));
    }
    i += n;
  }
  return out + "\"";
}

}  // namespace ember::json
