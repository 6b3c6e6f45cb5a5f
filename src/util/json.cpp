#include "util/json.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <iterator>
#include <limits>

#include "util/error.h"
#include "util/utf8.h"

namespace ember::json {

namespace {

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

// A const char* that publishes how far nlohmann has read: its SAX events carry no byte
// offset, and the depth-limit error wants one.
class Cursor {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  Cursor(const char* p, const char** read_to) : p_(p), read_to_(read_to) {}
  reference operator*() const { return *p_; }
  Cursor& operator++() {
    *read_to_ = ++p_;
    return *this;
  }
  Cursor operator++(int) {
    Cursor before = *this;
    ++*this;
    return before;
  }
  bool operator==(const Cursor& o) const { return p_ == o.p_; }

 private:
  const char* p_;
  const char** read_to_;
};

// nlohmann's what() reads "[json.exception.parse_error.101] parse error at line 1, column 5:
// <reason>; last read: '<token>'; expected ...". The byte offset replaces line and column,
// and the echoed token goes because it carries raw (possibly invalid UTF-8) input bytes.
std::string reason_of(std::string_view what, const std::string& last_token) {
  if (const size_t tag = what.find("] "); tag != std::string_view::npos) what.remove_prefix(tag + 2);
  if (what.starts_with("parse error"))
    if (const size_t colon = what.find(": "); colon != std::string_view::npos) what.remove_prefix(colon + 2);
  std::string reason(what);
  const std::string echo = "; last read: '" + last_token + "'";
  if (const size_t at = reason.find(echo); at != std::string::npos) reason.erase(at, echo.size());
  return reason;
}

// Builds Values straight from nlohmann's SAX events. Containers under construction wait on
// an explicit stack, so neither nlohmann's parser (iterative) nor this recurses per level.
class Builder final : public nlohmann::json_sax<nlohmann::json> {
 public:
  Builder(const char* begin, const char* const& read_to) : begin_(begin), read_to_(read_to) {}

  bool null() override { return add(Value::make_null()); }
  bool boolean(bool b) override { return add(Value::make_bool(b)); }
  bool number_integer(number_integer_t i) override { return add(Value::make_number(static_cast<double>(i), true, i)); }
  bool number_unsigned(number_unsigned_t u) override {
    // Above INT64_MAX there is no exact int64: a plain number, like any integer out of range.
    const bool fits = u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    return add(Value::make_number(static_cast<double>(u), fits, fits ? static_cast<int64_t>(u) : 0));
  }
  bool number_float(number_float_t d, const string_t&) override { return add(Value::make_number(d, false, 0)); }
  bool string(string_t& s) override { return add(Value::make_string(std::move(s))); }
  bool binary(binary_t&) override { return false; }  // only the binary formats produce these
  bool start_object(std::size_t) override { return open(true); }
  bool key(string_t& k) override {
    open_.back().key = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_array() override { return close(); }

  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception& e) override {
    // `position` counts the bytes read, the offending one (or the end of input) included.
    error_at_ = position > 0 ? position - 1 : 0;
    error_ = reason_of(e.what(), last_token);
    return false;
  }

  Value& root() { return root_; }
  const std::string& error() const { return error_; }
  size_t error_at() const { return error_at_; }

 private:
  struct Frame {
    bool is_object = false;
    std::vector<Value> items;
    std::vector<std::pair<std::string, Value>> members;
    std::string key;  // the member whose value comes next
  };

  bool add(Value v) {
    if (open_.empty()) {
      root_ = std::move(v);
    } else if (Frame& f = open_.back(); f.is_object) {
      f.members.emplace_back(std::move(f.key), std::move(v));
    } else {
      f.items.push_back(std::move(v));
    }
    return true;
  }
  bool open(bool is_object) {
    if (open_.size() == kMaxDepth) {
      error_at_ = static_cast<size_t>(read_to_ - begin_) - 1;  // the bracket just read
      error_ = fmt::format("nests deeper than {} arrays and objects", kMaxDepth);
      return false;
    }
    open_.emplace_back().is_object = is_object;
    return true;
  }
  bool close() {
    Frame f = std::move(open_.back());
    open_.pop_back();
    return add(f.is_object ? Value::make_object(std::move(f.members)) : Value::make_array(std::move(f.items)));
  }

  const char* begin_;
  const char* const& read_to_;
  std::vector<Frame> open_;
  Value root_;
  std::string error_;
  size_t error_at_ = 0;
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

Value parse(std::string_view text, std::string_view source) {
  // nlohmann takes a NUL byte for the end of the input, so "1\0junk" would parse. JSON text
  // has none outside strings, and inside them control characters must be escaped.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    fail(ErrorKind::Format, "{}: JSON at byte {}: a NUL byte", source, nul);
  const char* read_to = text.data();
  Builder b(text.data(), read_to);
  const bool ok = nlohmann::json::sax_parse(Cursor(text.data(), &read_to), Cursor(text.data() + text.size(), &read_to), &b);
  if (!ok) fail(ErrorKind::Format, "{}: JSON at byte {}: {}", source, b.error_at(), b.error());
  return std::move(b.root());
}

// Hand-written rather than nlohmann's dump(error_handler_t::replace): that one replaces a
// whole broken sequence by one U+FFFD (not each byte) and passes DEL (0x7f) through raw.
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
