// JSON values (RFC 8259) for the model tools and `ember batch`: config.json, safetensors
// headers, tokenizer.json, request lines. nlohmann-json parses (through its SAX interface,
// straight into Values); objects keep their key order; an integer that fits int64 is exact
// (is_integer()), any other number, an integer beyond int64 (a uint64 above INT64_MAX, say)
// included, is a plain number holding the nearest double. Errors are Error(Format), one line
// naming the source and byte offset: bad syntax, invalid UTF-8 in a string, a number beyond
// double's range, nesting deeper than kMaxDepth.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::json {

// Arrays and objects nest at most this deep. Values hold their children by value, so
// destroying, copying or walking one recurses once per level (parsing does not): the limit
// keeps hostile input from exhausting the stack there.
inline constexpr size_t kMaxDepth = 512;

class Value {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_number() const { return kind_ == Kind::Number; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_integer() const { return kind_ == Kind::Number && is_int_; }

  // Typed access; a wrong kind throws Error(Format) naming `what`.
  bool as_bool(std::string_view what = "value") const;
  double as_double(std::string_view what = "value") const;
  int64_t as_int(std::string_view what = "value") const;  // integers only
  const std::string& as_string(std::string_view what = "value") const;
  const std::vector<Value>& as_array(std::string_view what = "value") const;
  const std::vector<std::pair<std::string, Value>>& as_object(std::string_view what = "value") const;

  // Object member or nullptr (also nullptr when this is not an object).
  const Value* find(std::string_view key) const;
  // Object member; throws Error(Format) naming the key when missing.
  const Value& at(std::string_view key) const;

  static Value make_null() { return Value(); }
  static Value make_bool(bool b);
  static Value make_number(double d, bool is_int, int64_t i);
  static Value make_string(std::string s);
  static Value make_array(std::vector<Value> a);
  static Value make_object(std::vector<std::pair<std::string, Value>> o);

 private:
  Kind kind_ = Kind::Null;
  bool b_ = false;
  bool is_int_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;
  std::vector<Value> a_;
  std::vector<std::pair<std::string, Value>> o_;
};

// Parses a whole document (trailing whitespace only; a leading UTF-8 BOM is skipped).
// `source` names it in errors.
Value parse(std::string_view text, std::string_view source);

// `bytes` as a JSON string literal (quotes included): control characters escaped, valid
// UTF-8 passed through, each byte that is not valid UTF-8 replaced by U+FFFD.
std::string quote(std::string_view bytes);

}  // namespace ember::json
