// Binding GGUF tensors to an architecture's weights: each lookup states the shape the
// architecture expects (ggml order: ne[0] = row length) and the type family, and fails
// with one line naming the tensor, the expectation and what the file has.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/ops.h"

namespace ember {

namespace gguf { class File; struct TensorInfo; }

class TensorBinder {
 public:
  // Every bound tensor comes back as `store` prepared it (the CPU repacks matrices that
  // matmul reads, CUDA uploads everything); without a store, views into the mapped file.
  explicit TensorBinder(const gguf::File& file, WeightStore* store = nullptr) : file_(file), store_(store) {}

  // A weight matrix of `rows` rows of `cols` elements (GGUF shape [cols, rows]) in any
  // type the matmul/get_rows ops compute with, whose rows get_rows reads. Throws Format
  // when missing or mismatched.
  MatView matrix(const std::string& name, int64_t cols, int64_t rows);
  // Same, but returns a view with data == nullptr when the tensor is absent.
  MatView matrix_optional(const std::string& name, int64_t cols, int64_t rows);
  // A matrix that only matmul reads (not get_rows): may come back repacked (see above).
  // An output head tied to token_embd binds that tensor a second time this way.
  MatView matmul_matrix(const std::string& name, int64_t cols, int64_t rows);
  MatView matmul_matrix_optional(const std::string& name, int64_t cols, int64_t rows);
  // A 1-D f32 vector of n elements (norm weights, biases).
  const float* vector(const std::string& name, int64_t n);
  const float* vector_optional(const std::string& name, int64_t n);

  int bound() const { return n_bound_; }

 private:
  const gguf::TensorInfo* lookup(const std::string& name, bool required);
  MatView file_matrix(const std::string& name, int64_t cols, int64_t rows);
  const gguf::File& file_;
  WeightStore* store_;
  int n_bound_ = 0;
};

// "blk.<il>.<suffix>": per-layer tensor names as llama.cpp writes them.
std::string blk(int il, const char* suffix);

// True for weight types ember's ops compute with.
bool weight_type_supported(DType type);

}  // namespace ember
