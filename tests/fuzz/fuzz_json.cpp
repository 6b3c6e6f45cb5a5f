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
  switch (v.kind()) {
    case Value::Kind::Null: out += "null"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::String: out += ember::json::quote(v.as_string()); return;
    case Value::Kind::Number: {
      if (v.is_integer()) {
        out += fmt::format("{}", v.as_int());
        return;
      }
      const std::string d = fmt::format("{}", v.as_double());
      out += d;
      if (d.find_first_of(".e") == std::string::npos) out += ".0";
      return;
    }
    case Value::Kind::Array: {
      out += '[';
      for (const Value& item : v.as_array()) {
        write(item, out);
        out += ',';
      }
      if (out.back() == ',') out.back() = ']';
      else out += ']';
      return;
    }
    case Value::Kind::Object: {
      out += '{';
      for (const auto& [key, item] : v.as_object()) {
        if (v.find(key) == nullptr) __builtin_trap();
        out += ember::json::quote(key) + ':';
        write(item, out);
        out += ',';
      }
      if (out.back() == ',') out.back() = '}';
      else out += '}';
      return;
    }
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
