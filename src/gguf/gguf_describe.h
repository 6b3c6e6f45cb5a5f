// Human- and machine-readable descriptions of a parsed GGUF file, for `ember inspect` and for
// logs: one metadata value as text or JSON (arrays summarised by their first items), and the
// totals of the tensor table.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "gguf/gguf.h"

namespace ember::gguf {

struct DescribeLimits {
  uint64_t array_items = 8;  // array elements shown
  size_t string_chars = 96;  // bytes of a string shown in text (JSON shows strings whole)
};

// "u32 4096", "string \"llama\"", "array[string] 32000: [\"<unk>\", \"<s>\", ...]".
std::string describe_value(const KeyValue& kv, const DescribeLimits& limits = {});
// A JSON value: numbers and strings as is; an array as
// {"element_type": "string", "length": 32000, "first": ["<unk>", ...]}.
std::string describe_value_json(const KeyValue& kv, const DescribeLimits& limits = {});


struct TensorTotals {
  uint64_t tensors = 0;
  uint64_t parameters = 0;  // elements over all tensors
  uint64_t bytes = 0;       // data bytes without padding
  std::map<std::string, uint64_t> tensors_per_type;  // "Q4_K" -> count
  double bits_per_weight() const { return parameters ? 8.0 * double(bytes) / double(parameters) : 0.0; }
};
TensorTotals tensor_totals(const File& file);

// "4.08 GiB", "512 B": binary units, for sizes shown to people.
std::string human_bytes(uint64_t bytes);
// "6.74 B", "124.44 M", "512": decimal units, for parameter counts.
std::string human_count(uint64_t n);

}  // namespace ember::gguf
