// `ember quantize`: rewrites a GGUF with its weights in another type, tensor by tensor
// (input memory-mapped, one output tensor in memory at a time), measuring each tensor's
// round-trip error.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "quantize/ftype.h"

namespace ember {
class ThreadPool;
}

namespace ember::quantize {

struct TensorReport {
  size_t index = 0, count = 0;  // position in the file, tensors in the file
  std::string name;
  std::vector<int64_t> shape;   // ne0 first
  DType from = DType::F32, to = DType::F32;
  uint64_t bytes_in = 0, bytes_out = 0;
  bool copied = false;          // bytes copied unchanged (same type, or not decodable)
  double nmse = 0;              // normalised MSE of output vs input values (0 when copied)
};

struct QuantizeReport {
  std::vector<TensorReport> tensors;
  uint64_t bytes_in = 0, bytes_out = 0, file_bytes = 0;
  uint64_t n_params = 0;
  double seconds = 0;
  double bits_per_weight() const { return n_params ? 8.0 * static_cast<double>(bytes_out) / n_params : 0; }
};

// on_tensor (may be empty) runs after each tensor is written, in file order.
QuantizeReport quantize_file(const std::string& in_path, const std::string& out_path, const FileType& type,
                             ThreadPool* pool, const std::function<void(const TensorReport&)>& on_tensor = {});

}  // namespace ember::quantize
