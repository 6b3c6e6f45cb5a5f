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

const char* kind_name(const Value& v) {
  switch (v.type()) {
    case Value::value_t::null: return "null";
    case Value::value_t::boolean: return "a boolean";
    case Value::value_t::number_integer:
    case Value::value_t::number_unsigned:
    case Value::value_t::number_float: return "a number";
    case Value::value_t::string: return "a string";
    case Value::value_t::array: return "an array";
    case Value::value_t::object: return "an object";
    default: return "?";
  }
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

// Builds Values from nlohmann's SAX events (rather than its DOM parser) for the depth limit,
// byte offsets in errors, int64-only integers and duplicate keys kept. Containers under
// construction wait on an explicit stack, so neither nlohmann's parser (iterative) nor this
// recurses per level.
class Builder final : public nlohmann::json_sax<Value> {
 public:
  Builder(const char* begin, const char* const& read_to) : begin_(begin), read_to_(read_to) {}

  bool null() override { return add(Value(nullptr)); }
  bool boolean(bool b) override { return add(Value(b)); }
  bool number_integer(number_integer_t i) override { return add(Value(i)); }
  bool number_unsigned(number_unsigned_t u) override {
    // Integers are int64 (number_integer) only. Above INT64_MAX there is no exact int64: a
    // float, like any integer out of range.
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return add(Value(static_cast<int64_t>(u)));
    return add(Value(static_cast<double>(u)));
  }
  bool number_float(number_float_t d, const string_t&) override { return add(Value(d)); }
  bool string(string_t& s) override { return add(Value(std::move(s))); }
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
    Value value;      // an empty array or object, filled as its members arrive
    std::string key;  // the member whose value comes next
  };

  bool add(Value v) {
    if (open_.empty()) {
      root_ = std::move(v);
    } else if (Frame& f = open_.back(); f.value.is_object()) {
      // ordered_map is a vector of pairs: push_back keeps a duplicate key (find() still
      // returns the first), where emplace would drop it and operator[] overwrite.
      f.value.get_ref<Value::object_t&>().push_back({std::move(f.key), std::move(v)});
    } else {
      f.value.get_ref<Value::array_t&>().push_back(std::move(v));
    }
    return true;
  }
  bool open(bool is_object) {
    if (open_.size() == kMaxDepth) {
      error_at_ = static_cast<size_t>(read_to_ - begin_) - 1;  // the bracket just read
      error_ = fmt::format("nests deeper than {} arrays and objects", kMaxDepth);
      return false;
    }
    open_.emplace_back().value = is_object ? Value::object() : Value::array();
    return true;
  }
  bool close() {
    Value v = std::move(open_.back().value);
    open_.pop_back();
    return add(std::move(v));
  }

  const char* begin_;
  const char* const& read_to_;
  std::vector<Frame> open_;
  Value root_;
  std::string error_;
  size_t error_at_ = 0;
};

}  // namespace

bool as_bool(const Value& v, std::string_view what) {
  if (!v.is_boolean()) fail(ErrorKind::Format, "{} should be a boolean, is {}", what, kind_name(v));
  return v.get<bool>();
}
double as_double(const Value& v, std::string_view what) {
  if (!v.is_number()) fail(ErrorKind::Format, "{} should be a number, is {}", what, kind_name(v));
  return v.get<double>();
}
int64_t as_int(const Value& v, std::string_view what) {
  // parse() stores integers as int64 only; a uint64 could come from code building a Value.
  if (!v.is_number_integer() ||
      (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())))
    fail(ErrorKind::Format, "{} should be an integer, is {}", what, kind_name(v));
  return v.get<int64_t>();
}
const std::string& as_string(const Value& v, std::string_view what) {
  if (!v.is_string()) fail(ErrorKind::Format, "{} should be a string, is {}", what, kind_name(v));
  return v.get_ref<const std::string&>();
}
const Value::array_t& as_array(const Value& v, std::string_view what) {
  if (!v.is_array()) fail(ErrorKind::Format, "{} should be an array, is {}", what, kind_name(v));
  return v.get_ref<const Value::array_t&>();
}
const Value::object_t& as_object(const Value& v, std::string_view what) {
  if (!v.is_object()) fail(ErrorKind::Format, "{} should be an object, is {}", what, kind_name(v));
  return v.get_ref<const Value::object_t&>();
}

const Value* find(const Value& v, std::string_view key) {
  if (!v.is_object()) return nullptr;
  for (const auto& [k, item] : v.get_ref<const Value::object_t&>())
    if (k == key) return &item;
  return nullptr;
}

const Value& at(const Value& v, std::string_view key) {
  const Value* item = find(v, key);
  if (!item) fail(ErrorKind::Format, "missing key \"{}\"", key);
  return *item;
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
