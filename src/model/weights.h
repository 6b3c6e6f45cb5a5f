// Binding GGUF tensors to an architecture's weights: each lookup states the shape the
// architecture expects (ggml order: ne[0] = row length) and the type family, and fails
// with one line naming the tensor, the expectation and what the file has.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/ops.h"

namespace ember {

namespace gguf { class File; struct TensorInfo; }

class TensorBinder {
 public:
  // With `packed`, matrices bound by matmul_matrix are repacked for the CPU kernels when
  // they have a faster layout for the type, the copies kept in *packed; without, every
  // view points into the mapped file.
  explicit TensorBinder(const gguf::File& file, std::vector<PackedWeight>* packed = nullptr)
      : file_(file), packed_(packed) {}

  // A weight matrix of `rows` rows of `cols` elements (GGUF shape [cols, rows]) in any
  // type the matmul/get_rows ops compute with. Throws Format when missing or mismatched.
  MatView matrix(const std::string& name, int64_t cols, int64_t rows);
  // Same, but returns a view with data == nullptr when the tensor is absent.
  MatView matrix_optional(const std::string& name, int64_t cols, int64_t rows);
  // A matrix that only matmul reads (not get_rows): may come back repacked (see above).
  MatView matmul_matrix(const std::string& name, int64_t cols, int64_t rows);
  MatView matmul_matrix_optional(const std::string& name, int64_t cols, int64_t rows);
  // A bound matrix as matmul should read it: the repacked copy when there is one (e.g. an
  // output head tied to token_embd, whose rows get_rows keeps reading in the file).
  MatView for_matmul(const MatView& w);
  // A 1-D f32 vector of n elements (norm weights, biases).
  const float* vector(const std::string& name, int64_t n);
  const float* vector_optional(const std::string& name, int64_t n);

  int bound() const { return n_bound_; }

 private:
  const gguf::TensorInfo* lookup(const std::string& name, bool required);
  const gguf::File& file_;
  std::vector<PackedWeight>* packed_;
  int n_bound_ = 0;
};

// "blk.<il>.<suffix>": per-layer tensor names as llama.cpp writes them.
std::string blk(int il, const char* suffix);

// True for weight types ember's ops compute with.
bool weight_type_supported(DType type);

}  // namespace ember
