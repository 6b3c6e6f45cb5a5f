// Typed access to GGUF metadata: arrays read in place, scalars through checked conversions.
// A missing key, a wrong type or a value that does not fit is an Error(Format) naming the key.
#include <cmath>
#include <cstring>
#include <limits>

#include "gguf/gguf.h"
#include "gguf/gguf_format.h"
#include "gguf/gguf_printable.h"
#include "util/error.h"

namespace ember::gguf {

using format::is_float;
using format::is_integer;

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::U8: return "u8";
    case ValueType::I8: return "i8";
    case ValueType::U16: return "u16";
    case ValueType::I16: return "i16";
    case ValueType::U32: return "u32";
    case ValueType::I32: return "i32";
    case ValueType::F32: return "f32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::U64: return "u64";
    case ValueType::I64: return "i64";
    case ValueType::F64: return "f64";
  }
  return "unknown";
}

namespace {

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

bool is_signed_integer(ValueType t) {
  return t == ValueType::I8 || t == ValueType::I16 || t == ValueType::I32 || t == ValueType::I64;
}

}  // namespace

// ---- arrays ----

int64_t ArrayView::int_at(uint64_t i) const {
  if (i >= count_) fail(ErrorKind::Format, "array '{}': index {} out of range (length {})", printable(key_), i, count_);
  const uint8_t* p = data_ + i * format::scalar_size(type_);
  switch (type_) {
    case ValueType::U8: return load<uint8_t>(p);
    case ValueType::I8: return load<int8_t>(p);
    case ValueType::U16: return load<uint16_t>(p);
    case ValueType::I16: return load<int16_t>(p);
    case ValueType::U32: return load<uint32_t>(p);
    case ValueType::I32: return load<int32_t>(p);
    case ValueType::I64: return load<int64_t>(p);
    case ValueType::BOOL: return load<uint8_t>(p);
    case ValueType::U64: {
      uint64_t v = load<uint64_t>(p);
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail(ErrorKind::Format, "array '{}': element {} = {} does not fit int64", printable(key_), i, v);
      return static_cast<int64_t>(v);
    }
    default:
      fail(ErrorKind::Format, "array '{}': elements are {}, not integers", printable(key_), value_type_name(type_));
  }
}

double ArrayView::float_at(uint64_t i) const {
  if (i >= count_) fail(ErrorKind::Format, "array '{}': index {} out of range (length {})", printable(key_), i, count_);
  const uint8_t* p = data_ + i * format::scalar_size(type_);
  switch (type_) {
    case ValueType::F32: return load<float>(p);
    case ValueType::F64: return load<double>(p);
    case ValueType::U64: return static_cast<double>(load<uint64_t>(p));
    case ValueType::STRING:
    case ValueType::ARRAY:
      fail(ErrorKind::Format, "array '{}': elements are {}, not numbers", printable(key_), value_type_name(type_));
    default:
      return static_cast<double>(int_at(i));
  }
}

std::string_view ArrayView::string_at(uint64_t i) const {
  if (type_ != ValueType::STRING)
    fail(ErrorKind::Format, "array '{}': elements are {}, not strings", printable(key_), value_type_name(type_));
  if (i >= count_) fail(ErrorKind::Format, "array '{}': index {} out of range (length {})", printable(key_), i, count_);
  const uint8_t* p = base_ + (*string_offsets_)[i];  // validated by the parser
  return {reinterpret_cast<const char*>(p + 8), load<uint64_t>(p)};
}

// ---- files ----

void File::fail_key(std::string_view key, std::string_view what) const {
  fail(ErrorKind::Format, "{}: key '{}': {}", source_, printable(key), what);
}

const KeyValue* File::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second];
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const KeyValue& File::get(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (kv == nullptr) fail_key(key, "missing");
  return *kv;
}

namespace {

std::string wrong_type(const char* expected, ValueType found) {
  return fmt::format("expected {}, found {}", expected, value_type_name(found));
}

}  // namespace

std::string_view File::get_string(std::string_view key) const {
  const KeyValue& kv = get(key);
  if (kv.type != ValueType::STRING) fail_key(key, wrong_type("string", kv.type));
  return kv.str;
}

uint64_t File::get_u64(std::string_view key) const {
  const KeyValue& kv = get(key);
  if (!is_integer(kv.type)) fail_key(key, wrong_type("an integer", kv.type));
  if (is_signed_integer(kv.type) && kv.i64 < 0) fail_key(key, fmt::format("value {} is negative", kv.i64));
  return kv.u64;
}

int64_t File::get_i64(std::string_view key) const {
  const KeyValue& kv = get(key);
  if (!is_integer(kv.type)) fail_key(key, wrong_type("an integer", kv.type));
  if (kv.type == ValueType::U64 && kv.u64 > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail_key(key, fmt::format("value {} does not fit i64", kv.u64));
  return kv.i64;
}

uint32_t File::get_u32(std::string_view key) const {
  uint64_t v = get_u64(key);
  if (v > std::numeric_limits<uint32_t>::max()) fail_key(key, fmt::format("value {} does not fit u32", v));
  return static_cast<uint32_t>(v);
}

float File::get_f32(std::string_view key) const {
  const KeyValue& kv = get(key);
  if (is_float(kv.type)) return static_cast<float>(kv.f64);
  if (kv.type == ValueType::U64) return static_cast<float>(kv.u64);
  if (is_integer(kv.type)) return static_cast<float>(kv.i64);
  fail_key(key, wrong_type("a number", kv.type));
}

bool File::get_bool(std::string_view key) const {
  const KeyValue& kv = get(key);
  if (kv.type != ValueType::BOOL) fail_key(key, wrong_type("bool", kv.type));
  return kv.b;
}

const ArrayView& File::get_array(std::string_view key) const {
  const KeyValue& kv = get(key);
  if (kv.type != ValueType::ARRAY) fail_key(key, wrong_type("array", kv.type));
  return kv.array;
}

std::optional<std::string_view> File::find_string(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_string(key);
}

std::optional<uint64_t> File::find_u64(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_u64(key);
}

std::optional<uint32_t> File::find_u32(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_u32(key);
}

std::optional<int64_t> File::find_i64(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_i64(key);
}

std::optional<float> File::find_f32(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_f32(key);
}

std::optional<bool> File::find_bool(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_bool(key);
}

const ArrayView* File::find_array(std::string_view key) const {
  if (!has(key)) return nullptr;
  return &get_array(key);
}

}  // namespace ember::gguf
