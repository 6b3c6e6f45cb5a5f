// Facts about the GGUF byte layout shared by the reader and the writer.
// Spec: github.com/ggml-org/ggml/blob/master/docs/gguf.md. Everything is little-endian.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>

#include "gguf/gguf.h"

namespace ember::gguf::format {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader/writer copy little-endian fields directly");

constexpr uint32_t kMagic = 0x46554747;  // the bytes "GGUF" read as a little-endian u32
constexpr uint32_t kMinVersion = 2;      // v1 had 32-bit counts and lengths: obsolete
constexpr uint32_t kVersion = 3;         // v3 only added big-endian files (which we refuse)
constexpr size_t kMaxTensorName = 63;    // ggml's GGML_MAX_NAME is 64 including the NUL
constexpr int kMaxDims = 4;              // GGML_MAX_DIMS
constexpr uint32_t kDefaultAlignment = 32;
// Real files use 32 (or a page size); the bound keeps padding arithmetic far from overflow.
constexpr uint64_t kMaxAlignment = uint64_t{1} << 20;
constexpr const char* kAlignmentKey = "general.alignment";
constexpr uint32_t kValueTypeCount = 13;  // ids 0..12

// The smallest encodings, used to bound counts by the bytes left before trusting them.
constexpr uint64_t kMinKeyValueBytes = 8 + 4 + 1;       // empty key, type, one byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, 1 dim, type, offset
constexpr uint64_t kStringHeaderBytes = 8;              // u64 length before the bytes

// Bytes of one value of a fixed-size type; 0 for STRING, ARRAY and unknown ids.
constexpr size_t scalar_size(ValueType t) {
  switch (t) {
    case ValueType::U8: case ValueType::I8: case ValueType::BOOL: return 1;
    case ValueType::U16: case ValueType::I16: return 2;
    case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
    case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
    case ValueType::STRING: case ValueType::ARRAY: return 0;
  }
  return 0;
}

constexpr bool is_integer(ValueType t) {
  switch (t) {
    case ValueType::U8: case ValueType::I8: case ValueType::U16: case ValueType::I16:
    case ValueType::U32: case ValueType::I32: case ValueType::U64: case ValueType::I64:
      return true;
    default:
      return false;
  }
}

constexpr bool is_float(ValueType t) { return t == ValueType::F32 || t == ValueType::F64; }

constexpr uint64_t align_up(uint64_t x, uint64_t alignment) {
  return (x + alignment - 1) / alignment * alignment;
}

}  // namespace ember::gguf::format
