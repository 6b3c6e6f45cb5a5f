// Binding GGUF tensors to an architecture's weights: each lookup states the shape the
// architecture expects (ggml order: ne[0] = row length) and the type family, and fails
// with one line naming the tensor, the expectation and what the file has.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "backend/ops.h"

namespace ember {

namespace gguf { class File; struct TensorInfo; }

class TensorBinder {
 public:
  // Every bound tensor comes back as the store of its device under `placement`
  // (tensor_device) prepared it: the CPU repacks matrices that matmul reads, CUDA uploads
  // everything. A missing store (nullptr) means views into the mapped file.
  TensorBinder(const gguf::File& file, WeightStore* host, WeightStore* device, const Placement& placement)
      : file_(file), host_(host), device_(device), placement_(placement) {}
  // Every tensor views the mapped file (no store).
  explicit TensorBinder(const gguf::File& file) : file_(file) {}

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
  // Rows [first, first + n) of a matmul matrix of total_rows rows, bound as a matrix of its
  // own: a fused tensor split at load (phi3's attn_qkv, its gate+up ffn_up).
  MatView matmul_matrix_rows(const std::string& name, int64_t cols, int64_t total_rows, int64_t first, int64_t n);
  // A 3-D expert tensor (GGUF shape [cols, rows, n_expert], the expert slowest) as its
  // n_expert matrices, each prepared like matmul_matrix (the CPU repacks slice by slice).
  std::vector<MatView> matmul_experts(const std::string& name, int64_t cols, int64_t rows, int64_t n_expert);
  // A 1-D f32 vector of n elements (norm weights, biases).
  const float* vector(const std::string& name, int64_t n);
  const float* vector_optional(const std::string& name, int64_t n);
  // An optional 2-D f32 table (GGUF shape [cols, rows]) prepared like a vector: a view of rows
  // of cols floats (the experts' biases, one row per expert); data == nullptr when absent.
  MatView f32_table_optional(const std::string& name, int64_t cols, int64_t rows);
  // An optional vector outside the blocks that layer il reads (rope_freqs.weight): prepared
  // once on each device that has such a layer (llama.cpp duplicates it per layer).
  const float* layer_vector_optional(const std::string& name, int64_t n, int il);

  int bound() const { return n_bound_; }
  // The file being bound: a family reads its own metadata keys from it (arch_gemma3.cpp).
  const gguf::File& file() const { return file_; }

 private:
  const gguf::TensorInfo* lookup(const std::string& name, bool required);
  MatView file_matrix(const std::string& name, int64_t cols, int64_t rows);
  const float* file_vector(const std::string& name, int64_t n, int64_t rows = 1);
  WeightStore* store_for(const std::string& name, bool matmul) const;
  const gguf::File& file_;
  WeightStore* host_ = nullptr;
  WeightStore* device_ = nullptr;
  Placement placement_;
  std::map<std::pair<std::string, DeviceKind>, const float*> layer_vectors_;  // layer_vector_optional's
  int n_bound_ = 0;
};

// "blk.<il>.<suffix>": per-layer tensor names as llama.cpp writes them.
std::string blk(int il, const char* suffix);

// The device tensor `name` lives on under `placement`: a layer's tensors ("blk.N.") with
// layer N, the token embedding with layer 0 (`matmul`: read by matmul as a tied output head,
// which goes with the last layer), everything else (output norm and head) with the last layer.
DeviceKind tensor_device(std::string_view name, const Placement& placement, bool matmul);

// True for weight types ember's ops compute with.
bool weight_type_supported(DType type);

}  // namespace ember
