// Shared helpers of the model-tools tests (convert, quantize, synth).
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tensor/quant.h"

namespace ember::test {

// A fresh directory under the system temp dir, removed with everything in it on scope exit.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("ember-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::string shared_path(const std::string& rel) { return std::string(EMBER_SHARED_DIR) + "/" + rel; }

// Every element of a tensor as f32 (any type the reference dequantizers know).
inline std::vector<float> tensor_values(const gguf::TensorInfo& t) {
  std::vector<float> out(static_cast<size_t>(t.n_elements()));
  const int64_t rows = t.n_elements() / t.ne[0];
  const size_t row_bytes = dtype_row_bytes(t.type, t.ne[0]);
  for (int64_t r = 0; r < rows; ++r)
    dequantize_row(t.type, t.data + r * row_bytes, out.data() + r * t.ne[0], t.ne[0]);
  return out;
}

// Invariants every GGUF ember writes must satisfy, beyond what the reader already checks:
// tensor data aligned, sizes exactly the type's row bytes, tensors non-overlapping and in
// order, all values finite.
inline void check_written_gguf(const gguf::File& f, std::string* problem) {
  uint64_t end = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    const uint64_t expect = dtype_row_bytes(t.type, t.ne[0]) * static_cast<uint64_t>(t.n_elements() / t.ne[0]);
    if (t.nbytes != expect) *problem = std::string(t.name) + ": nbytes";
    if (t.offset % f.alignment() != 0) *problem = std::string(t.name) + ": misaligned";
    if (t.offset < end) *problem = std::string(t.name) + ": overlaps";
    end = t.offset + t.nbytes;
    if (dtype_can_quantize(t.type)) {
      for (float v : tensor_values(t))
        if (!std::isfinite(v)) {
          *problem = std::string(t.name) + ": non-finite value";
          break;
        }
    }
  }
}

}  // namespace ember::test
