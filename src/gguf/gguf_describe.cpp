#include "gguf/gguf_describe.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "gguf/gguf_printable.h"
#include "util/json.h"

namespace ember::gguf {

namespace {

bool is_unsigned64(ValueType t) { return t == ValueType::U64; }

// A string for the text listing: printable (escaped, cut) and quoted, with inner quotes escaped
// so `"\""` cannot be misread.
std::string quoted(std::string_view s, size_t max_bytes) {
  std::string out = "\"";
  for (char c : printable(s, max_bytes)) {
    if (c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

// One array element as text (JSON when `json`); strings quoted.
std::string element(const ArrayView& a, uint64_t i, bool json, size_t string_chars) {
  switch (a.element_type()) {
    case ValueType::STRING:
      return json ? json::quote(a.string_at(i)) : quoted(a.string_at(i), string_chars);
    case ValueType::F32:
    case ValueType::F64: {
      const double v = a.float_at(i);
      if (json && !std::isfinite(v)) return "null";
      return a.element_type() == ValueType::F32 ? fmt::format("{}", static_cast<float>(v)) : fmt::format("{}", v);
    }
    case ValueType::BOOL:
      return a.int_at(i) ? "true" : "false";
    case ValueType::U64: {
      uint64_t v;  // read directly: int_at refuses values above INT64_MAX
      std::memcpy(&v, a.data_ + i * 8, 8);
      return fmt::format("{}", v);
    }
    default:
      return fmt::format("{}", a.int_at(i));
  }
}

std::string scalar_text(const KeyValue& kv, bool json) {
  switch (kv.type) {
    case ValueType::F32:
    case ValueType::F64:
      if (json && !std::isfinite(kv.f64)) return "null";
      return kv.type == ValueType::F32 ? fmt::format("{}", static_cast<float>(kv.f64)) : fmt::format("{}", kv.f64);
    case ValueType::BOOL: return kv.b ? "true" : "false";
    default: return is_unsigned64(kv.type) || kv.i64 >= 0 ? fmt::format("{}", kv.u64) : fmt::format("{}", kv.i64);
  }
}

}  // namespace

std::string describe_value(const KeyValue& kv, const DescribeLimits& limits) {
  if (kv.type == ValueType::STRING) return "string " + quoted(kv.str, limits.string_chars);
  if (kv.type != ValueType::ARRAY) return fmt::format("{} {}", value_type_name(kv.type), scalar_text(kv, false));
  const ArrayView& a = kv.array;
  std::string out = fmt::format("array[{}] {}: [", value_type_name(a.element_type()), a.size());
  const uint64_t shown = std::min<uint64_t>(a.size(), limits.array_items);
  for (uint64_t i = 0; i < shown; ++i) {
    if (i) out += ", ";
    out += element(a, i, false, 32);
  }
  if (shown < a.size()) out += shown ? ", ..." : "...";
  return out + "]";
}

std::string describe_value_json(const KeyValue& kv, const DescribeLimits& limits) {
  if (kv.type == ValueType::STRING) return json::quote(kv.str);
  if (kv.type != ValueType::ARRAY) return scalar_text(kv, true);
  const ArrayView& a = kv.array;
  std::string out =
      fmt::format("{{\"element_type\": \"{}\", \"length\": {}, \"first\": [", value_type_name(a.element_type()), a.size());
  const uint64_t shown = std::min<uint64_t>(a.size(), limits.array_items);
  for (uint64_t i = 0; i < shown; ++i) {
    if (i) out += ", ";
    out += element(a, i, true, 0);
  }
  return out + "]}";
}

TensorTotals tensor_totals(const File& file) {
  TensorTotals t;
  for (const TensorInfo& info : file.tensors()) {
    ++t.tensors;
    t.parameters += static_cast<uint64_t>(info.n_elements());
    t.bytes += info.nbytes;
    ++t.tensors_per_type[dtype_name(info.type)];
  }
  return t;
}

std::string human_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", v, kUnits[u]);
}

std::string human_count(uint64_t n) {
  static const char* const kUnits[] = {"", " K", " M", " B", " T", " P", " E"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1000.0 && u < 6) {
    v /= 1000.0;
    ++u;
  }
  return u == 0 ? fmt::format("{}", n) : fmt::format("{:.2f}{}", v, kUnits[u]);
}

}  // namespace ember::gguf
