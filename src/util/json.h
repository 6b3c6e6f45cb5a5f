// JSON reading for the model tools, `ember batch` and the server: config.json, safetensors
// headers, tokenizer.json, request lines and bodies. Values are nlohmann's ordered_json
// (objects keep their key order); parse() adds what ember needs on top of nlohmann's parser:
// one-line Error(Format) messages naming the source and byte offset (bad syntax, invalid
// UTF-8 in a string, a number beyond double's range, a NUL byte, nesting deeper than
// kMaxDepth), an integer that fits int64 kept exact (is_number_integer()) and any other
// number, an integer beyond int64 included, a float holding the nearest double. Duplicate
// keys are all kept; find() and at() return the first.
#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ember::json {

using Value = nlohmann::ordered_json;

// Arrays and objects nest at most this deep, which bounds the recursion of code that walks
// a parsed value (parsing itself does not recurse).
inline constexpr size_t kMaxDepth = 512;

// Parses a whole document (trailing whitespace only; a leading UTF-8 BOM is skipped).
// `source` names it in errors.
Value parse(std::string_view text, std::string_view source);

// Typed access; a wrong kind throws Error(Format) "<what> should be <kind>, is <kind>".
bool as_bool(const Value& v, std::string_view what = "value");
double as_double(const Value& v, std::string_view what = "value");  // any number
int64_t as_int(const Value& v, std::string_view what = "value");    // integers only
const std::string& as_string(const Value& v, std::string_view what = "value");
const Value::array_t& as_array(const Value& v, std::string_view what = "value");
const Value::object_t& as_object(const Value& v, std::string_view what = "value");

// Object member or nullptr (also nullptr when `v` is not an object).
const Value* find(const Value& v, std::string_view key);
// Object member; throws Error(Format) naming the key when missing.
const Value& at(const Value& v, std::string_view key);

// `bytes` as a JSON string literal (quotes included): control characters and DEL escaped,
// valid UTF-8 passed through, each byte that is not valid UTF-8 replaced by U+FFFD. The
// hand-formatted writers (inspect --json, batch output, stats) use it; see json.cpp for why
// it is not nlohmann's dump().
std::string quote(std::string_view bytes);

}  // namespace ember::json
