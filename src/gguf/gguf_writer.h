// GGUF v3 writer producing files that llama.cpp and ember's reader both accept.
//
// It streams: metadata and tensor descriptions (name, type, shape) are declared first, then
// write() emits the header and produces the tensor data one tensor at a time through each
// tensor's fill callback, so memory stays around the size of the largest single tensor.
// Layout follows ggml: header, key/values, tensor infos, zero padding to general.alignment,
// then each tensor's bytes in declaration order, each padded to the alignment.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"
#include "tensor/dtype.h"

namespace ember::gguf {

class Writer {
 public:
  // Fills `out` (exactly the tensor's byte size, zero-initialised) with the tensor's data.
  using Fill = std::function<void(std::span<uint8_t> out)>;

  static constexpr uint32_t kDefaultAlignment = 32;

  // Metadata. Setting an existing key replaces its value and keeps its position; keys are
  // written in the order they were first set. "general.alignment" (u32) is written always:
  // 32 unless set (it must be a power of two, at most the reader's bound).
  void set_u8(std::string_view key, uint8_t v);
  void set_i8(std::string_view key, int8_t v);
  void set_u16(std::string_view key, uint16_t v);
  void set_i16(std::string_view key, int16_t v);
  void set_u32(std::string_view key, uint32_t v);
  void set_i32(std::string_view key, int32_t v);
  void set_u64(std::string_view key, uint64_t v);
  void set_i64(std::string_view key, int64_t v);
  void set_f32(std::string_view key, float v);
  void set_f64(std::string_view key, double v);
  void set_bool(std::string_view key, bool v);
  void set_string(std::string_view key, std::string_view v);
  void set_array_string(std::string_view key, const std::vector<std::string>& v);
  void set_array_u8(std::string_view key, std::span<const uint8_t> v);
  void set_array_i32(std::string_view key, std::span<const int32_t> v);
  void set_array_u32(std::string_view key, std::span<const uint32_t> v);
  void set_array_i64(std::string_view key, std::span<const int64_t> v);
  void set_array_f32(std::string_view key, std::span<const float> v);
  void set_array_bool(std::string_view key, const std::vector<bool>& v);
  // Copies one key/value (any type, arrays included) as a reader File holds it.
  void copy_kv(const KeyValue& kv);
  // Copies every key/value of `file`, optionally skipping keys for which skip(key) is true.
  void copy_metadata(const File& file, const std::function<bool(std::string_view)>& skip = {});
  bool has(std::string_view key) const;
  void remove(std::string_view key);

  // Declares a tensor; `shape` lists ne0 (innermost) first, 1 to 4 dimensions, each > 0, ne0 a
  // multiple of the type's block size. The fill callback runs during write(), in declaration
  // order. Throws Error(InvalidArgument) for a bad name, shape or duplicate.
  void add_tensor(std::string name, DType type, std::vector<int64_t> shape, Fill fill);
  size_t tensor_count() const { return tensors_.size(); }

  // Writes to `path` + ".tmp" and renames it over `path` when complete: a failure (I/O error
  // or an exception from a fill callback) leaves `path` untouched and removes the .tmp file.
  void write(const std::string& path) const;
  // The same bytes in memory (tests, fuzz seeds, small files).
  std::vector<uint8_t> to_bytes() const;

  class Sink;  // where write()/to_bytes() send the bytes (defined in gguf_writer.cpp)

 private:
  struct Entry {
    std::string key;
    std::vector<uint8_t> value;  // value type id (u32 LE) followed by the encoded value
  };
  struct Tensor {
    std::string name;
    DType type;
    int n_dims;
    int64_t ne[4];
    uint64_t nbytes;
    Fill fill;
  };
  void set_raw(std::string_view key, std::vector<uint8_t> value);
  uint32_t alignment() const;
  void emit(Sink& sink) const;

  std::vector<Entry> entries_;
  std::vector<Tensor> tensors_;
};

}  // namespace ember::gguf
