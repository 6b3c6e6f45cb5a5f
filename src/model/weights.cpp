#include "model/weights.h"

#include <fmt/format.h>

#include "gguf/gguf.h"
#include "util/error.h"

namespace ember {

std::string blk(int il, const char* suffix) { return fmt::format("blk.{}.{}", il, suffix); }

bool weight_type_supported(DType type) {
  switch (type) {
    case DType::F32: case DType::F16: case DType::BF16:
    case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0:
    case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K:
    case DType::MXFP4:
      return true;
    default:
      return false;
  }
}

static std::string shape_str(const gguf::TensorInfo& t) {
  std::string s;
  for (int d = 0; d < t.n_dims; ++d) s += fmt::format("{}{}", d ? "x" : "", t.ne[d]);
  return s.empty() ? "scalar" : s;
}

const gguf::TensorInfo* TensorBinder::lookup(const std::string& name, bool required) {
  const gguf::TensorInfo* t = file_.find_tensor(name);
  if (!t && required) fail(ErrorKind::Format, "{}: required tensor {} is missing", file_.source(), name);
  if (t) ++n_bound_;
  return t;
}

MatView TensorBinder::matrix_optional(const std::string& name, int64_t cols, int64_t rows) {
  const gguf::TensorInfo* t = file_.find_tensor(name);
  if (!t) return MatView{};
  return matrix(name, cols, rows);
}

DeviceKind tensor_device(std::string_view name, const Placement& placement, bool matmul) {
  const int last = placement.n_layer - 1;
  if (name.substr(0, 4) == "blk.") {
    int il = 0;
    size_t i = 4;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9') il = il * 10 + (name[i++] - '0');
    return placement.layer(il);
  }
  if (name == "token_embd.weight" && !matmul) return placement.layer(0);
  return placement.layer(last);
}

WeightStore* TensorBinder::store_for(const std::string& name, bool matmul) const {
  return tensor_device(name, placement_, matmul) == DeviceKind::Cpu ? host_ : device_;
}

MatView TensorBinder::matrix(const std::string& name, int64_t cols, int64_t rows) {
  const MatView w = file_matrix(name, cols, rows);
  WeightStore* store = store_for(name, false);
  return store ? store->prepare_rows(w) : w;
}

MatView TensorBinder::file_matrix(const std::string& name, int64_t cols, int64_t rows) {
  const gguf::TensorInfo* t = lookup(name, true);
  const bool ok = t->ne[0] == cols && t->ne[1] == rows && t->ne[2] == 1 && t->ne[3] == 1;
  if (!ok)
    fail(ErrorKind::Format, "tensor {}: expected {}x{}, file has {}", name, cols, rows, shape_str(*t));
  if (!weight_type_supported(t->type))
    fail(ErrorKind::Unsupported, "tensor {}: type {} is not supported for weight matrices", name,
         dtype_name(t->type));
  if (cols % dtype_size(t->type).block_size != 0)
    fail(ErrorKind::Format, "tensor {}: row of {} elements is not a whole number of {} blocks", name, cols,
         dtype_name(t->type));
  return MatView{t->type, cols, rows, dtype_row_bytes(t->type, cols), t->data};
}

MatView TensorBinder::matmul_matrix(const std::string& name, int64_t cols, int64_t rows) {
  const MatView w = file_matrix(name, cols, rows);
  WeightStore* store = store_for(name, true);
  return store ? store->prepare_matmul(w) : w;
}

MatView TensorBinder::matmul_matrix_rows(const std::string& name, int64_t cols, int64_t total_rows, int64_t first,
                                         int64_t n) {
  MatView w = file_matrix(name, cols, total_rows);
  if (first < 0 || n <= 0 || first + n > total_rows)
    fail(ErrorKind::Internal, "tensor {}: rows {}..{} outside its {}", name, first, first + n, total_rows);
  w.data = w.row(first);
  w.rows = n;
  WeightStore* store = store_for(name, true);
  return store ? store->prepare_matmul(w) : w;
}

MatView TensorBinder::matmul_matrix_optional(const std::string& name, int64_t cols, int64_t rows) {
  if (!file_.find_tensor(name)) return MatView{};
  return matmul_matrix(name, cols, rows);
}

std::vector<MatView> TensorBinder::matmul_experts(const std::string& name, int64_t cols, int64_t rows,
                                                  int64_t n_expert) {
  const gguf::TensorInfo* t = lookup(name, true);
  if (t->ne[0] != cols || t->ne[1] != rows || t->ne[2] != n_expert || t->ne[3] != 1)
    fail(ErrorKind::Format, "tensor {}: expected {}x{}x{}, file has {}", name, cols, rows, n_expert, shape_str(*t));
  if (!weight_type_supported(t->type))
    fail(ErrorKind::Unsupported, "tensor {}: type {} is not supported for weight matrices", name, dtype_name(t->type));
  if (cols % dtype_size(t->type).block_size != 0)
    fail(ErrorKind::Format, "tensor {}: row of {} elements is not a whole number of {} blocks", name, cols,
         dtype_name(t->type));
  const size_t row_bytes = dtype_row_bytes(t->type, cols);
  WeightStore* store = store_for(name, true);
  std::vector<MatView> experts;
  for (int64_t e = 0; e < n_expert; ++e)
    experts.push_back(MatView{t->type, cols, rows, row_bytes, static_cast<const uint8_t*>(t->data) + e * rows * row_bytes});
  return store ? store->prepare_experts(experts) : experts;
}

const float* TensorBinder::vector_optional(const std::string& name, int64_t n) {
  if (!file_.find_tensor(name)) return nullptr;
  return vector(name, n);
}

const float* TensorBinder::layer_vector_optional(const std::string& name, int64_t n, int il) {
  if (!file_.find_tensor(name)) return nullptr;
  const DeviceKind device = placement_.layer(il);
  const float*& bound = layer_vectors_[{name, device}];
  if (bound) return bound;
  const float* v = file_vector(name, n);
  WeightStore* store = device == DeviceKind::Cpu ? host_ : device_;
  bound = store ? store->prepare_vector(v, n) : v;
  return bound;
}

const float* TensorBinder::vector(const std::string& name, int64_t n) {
  const float* v = file_vector(name, n);
  WeightStore* store = store_for(name, false);
  return store ? store->prepare_vector(v, n) : v;
}

MatView TensorBinder::f32_table_optional(const std::string& name, int64_t cols, int64_t rows) {
  if (!file_.find_tensor(name)) return MatView{};
  const float* v = file_vector(name, cols, rows);
  WeightStore* store = store_for(name, false);
  const float* data = store ? store->prepare_vector(v, cols * rows) : v;
  return MatView{DType::F32, cols, rows, static_cast<size_t>(cols) * sizeof(float), data};
}

// A 1-D f32 tensor of n elements, or (rows > 1) a 2-D one of rows x n.
const float* TensorBinder::file_vector(const std::string& name, int64_t n, int64_t rows) {
  const gguf::TensorInfo* t = lookup(name, true);
  if (t->n_elements() != n * rows || t->ne[0] != n || (rows > 1 && t->ne[1] != rows)) {
    if (rows > 1) fail(ErrorKind::Format, "tensor {}: expected {}x{}, file has {}", name, n, rows, shape_str(*t));
    fail(ErrorKind::Format, "tensor {}: expected {}, file has {}", name, n, shape_str(*t));
  }
  if (t->type != DType::F32)
    fail(ErrorKind::Unsupported, "tensor {}: expected type F32, file has {}", name, dtype_name(t->type));
  if (reinterpret_cast<uintptr_t>(t->data) % alignof(float) != 0)
    fail(ErrorKind::Format, "tensor {}: data is not 4-byte aligned", name);
  return reinterpret_cast<const float*>(t->data);
}

}  // namespace ember
