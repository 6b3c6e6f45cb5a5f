// Writing Hugging Face checkpoint files in the convert tests: safetensors (F32 or BF16) and
// small JSON/text files.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tensor/fp16.h"

namespace ember::test {

struct StTensor {
  std::string dtype;  // F32 or BF16
  std::vector<int64_t> shape;
  std::vector<float> values;
};

inline void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

inline std::string json_escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c < 0x20) out += fmt::format("\\u{:04x}", c);
    else out += static_cast<char>(c);
  }
  return out;
}

inline void write_safetensors(const std::string& path, const std::map<std::string, StTensor>& tensors) {
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  std::vector<uint8_t> data;
  for (const auto& [name, t] : tensors) {
    const size_t begin = data.size();
    for (float v : t.values) {
      if (t.dtype == "F32") {
        uint8_t b[4];
        std::memcpy(b, &v, 4);
        data.insert(data.end(), b, b + 4);
      } else {
        const uint16_t h = f32_to_bf16(v);
        data.push_back(static_cast<uint8_t>(h & 0xff));
        data.push_back(static_cast<uint8_t>(h >> 8));
      }
    }
    header += fmt::format(",\"{}\":{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}", name, t.dtype,
                          fmt::join(t.shape, ","), begin, data.size());
  }
  header += "}";
  while ((header.size() + 8) % 8) header += ' ';
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header;
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

}  // namespace ember::test
