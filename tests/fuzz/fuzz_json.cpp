// libFuzzer target for the JSON reader (`make fuzz`): any bytes must either parse or throw
// ember::Error(Format) -- never crash, hang, overflow the stack or hit UB. What parses is
// written back out (json::quote for strings) and must read back to the same text: parse and
// quote agree on every string and number the reader can return.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "util/error.h"
#include "util/json.h"

namespace {

using ember::json::Value;

// Canonical text of a parsed value. Non-integers keep a '.' or exponent, so they read back
// as non-integers (-0.0 included). Recursion is bounded by json::kMaxDepth.
void write(const Value& v, std::string& out) {
  switch (v.type()) {
    case Value::value_t::null: out += "null"; return;
    case Value::value_t::boolean: out += ember::json::as_bool(v) ? "true" : "false"; return;
    case Value::value_t::string: out += ember::json::quote(ember::json::as_string(v)); return;
    case Value::value_t::number_integer: out += fmt::format("{}", ember::json::as_int(v)); return;
    case Value::value_t::number_float: {
      const std::string d = fmt::format("{}", ember::json::as_double(v));
      out += d;
      if (d.find_first_of(".e") == std::string::npos) out += ".0";
      return;
    }
    case Value::value_t::array: {
      out += '[';
      for (const Value& item : ember::json::as_array(v)) {
        write(item, out);
        out += ',';
      }
      if (out.back() == ',') out.back() = ']';
      else out += ']';
      return;
    }
    case Value::value_t::object: {
      out += '{';
      for (const auto& [key, item] : ember::json::as_object(v)) {
        if (ember::json::find(v, key) == nullptr) __builtin_trap();
        out += ember::json::quote(key) + ':';
        write(item, out);
        out += ',';
      }
      if (out.back() == ',') out.back() = '}';
      else out += '}';
      return;
    }
    default: __builtin_trap();  // parse() makes no unsigned, binary or discarded values
  }
}

std::string written(const Value& v) {
  std::string out;
  write(v, out);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string once;
  try {
    once = written(ember::json::parse(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json"));
  } catch (const ember::Error& e) {
    if (e.kind() != ember::ErrorKind::Format) __builtin_trap();  // the reader only reports Format
    return 0;
  }
  try {
    if (written(ember::json::parse(once, "written")) != once) __builtin_trap();
  } catch (const ember::Error&) {
    __builtin_trap();  // what quote and fmt wrote must be JSON
  }
  return 0;
}
