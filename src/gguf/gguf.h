// GGUF v2/v3 reader: a pure function over a byte span that validates everything before use
// (see DESIGN.md principle 4), plus typed metadata accessors. The writer is in gguf_writer.h.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tensor/dtype.h"
#include "util/mmap.h"

namespace ember::gguf {

enum class ValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
const char* value_type_name(ValueType t);

// A metadata array viewed in place. Elements are read (little-endian, unaligned-safe) on
// access; string elements are located through an offset table built while validating.
class ArrayView {
 public:
  ValueType element_type() const { return type_; }
  uint64_t size() const { return count_; }
  // Element accessors throw Error(Format) naming the key for a wrong element type, an index
  // out of range, or (int_at) a U64 value above INT64_MAX.
  int64_t int_at(uint64_t i) const;          // any integer or bool element type
  double float_at(uint64_t i) const;         // any numeric element type
  std::string_view string_at(uint64_t i) const;  // STRING elements only

  // internal: filled by the parser
  std::string_view key_;                    // for error messages
  ValueType type_ = ValueType::U8;
  uint64_t count_ = 0;
  const uint8_t* data_ = nullptr;           // first element (numeric arrays)
  std::shared_ptr<const std::vector<uint64_t>> string_offsets_;  // offset of each string's length prefix
  const uint8_t* base_ = nullptr;           // file start, for string offsets
};

struct KeyValue {
  std::string_view key;
  ValueType type = ValueType::U8;
  // Scalars are stored widened; strings point into the file; arrays are views.
  uint64_t u64 = 0;
  int64_t i64 = 0;
  double f64 = 0;
  bool b = false;
  std::string_view str;
  ArrayView array;
};

struct TensorInfo {
  std::string_view name;
  DType type = DType::F32;
  int n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};  // ne[0] is the innermost (contiguous) dimension
  uint64_t offset = 0;           // relative to the start of the data section
  uint64_t nbytes = 0;
  const uint8_t* data = nullptr; // points into the file bytes
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class File {
 public:
  // Parses and validates `bytes`; `source` names the file in error messages. The bytes must
  // outlive the File. Throws ember::Error(Format) with one line naming field and values.
  static File parse(std::span<const uint8_t> bytes, std::string source);
  // Memory-maps `path` and parses it; the File owns the mapping.
  static File open(const std::string& path);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_size() const { return bytes_.size(); }
  std::span<const uint8_t> bytes() const { return bytes_; }
  const std::string& source() const { return source_; }

  const std::vector<KeyValue>& metadata() const { return kvs_; }
  const std::vector<TensorInfo>& tensors() const { return tensors_; }

  const KeyValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  const TensorInfo* find_tensor(std::string_view name) const;

  // Typed accessors: a missing key or a wrong type throws Error(Format) naming the key, the
  // expected and the actual type. Integer getters accept any integer type whose value fits.
  std::string_view get_string(std::string_view key) const;
  uint64_t get_u64(std::string_view key) const;
  int64_t get_i64(std::string_view key) const;
  uint32_t get_u32(std::string_view key) const;
  float get_f32(std::string_view key) const;  // accepts F32/F64 (and integers)
  bool get_bool(std::string_view key) const;
  const ArrayView& get_array(std::string_view key) const;

  std::optional<std::string_view> find_string(std::string_view key) const;
  std::optional<uint64_t> find_u64(std::string_view key) const;
  std::optional<uint32_t> find_u32(std::string_view key) const;
  std::optional<int64_t> find_i64(std::string_view key) const;
  std::optional<float> find_f32(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;
  const ArrayView* find_array(std::string_view key) const;

 private:
  [[noreturn]] void fail_key(std::string_view key, std::string_view what) const;
  const KeyValue& get(std::string_view key) const;

  std::shared_ptr<MappedFile> mapping_;  // set by open(); keeps bytes_ alive
  std::span<const uint8_t> bytes_;
  std::string source_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> kvs_;
  std::vector<TensorInfo> tensors_;
  // Views into the file bytes, which stay put when the File moves.
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
  friend class Parser;
};

}  // namespace ember::gguf
