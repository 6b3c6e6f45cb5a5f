// The CUDA backend's weights (backend/backend.h WeightStore): every tensor uploaded once at
// load, in the file's row layout, which the kernels read.
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "backend/cuda_backend.h"
#include "cuda/device_memory.h"
#include "cuda/device_select.h"
#include "util/error.h"

namespace ember::cuda {
namespace {

// Weights uploaded once at load. A tensor bound twice (a head tied to the embeddings) is
// uploaded once.
class CudaWeightStore final : public WeightStore {
 public:
  explicit CudaWeightStore(DeviceKind kind) : kind_(kind), rt_(device_runtime(kind)) {}
  DeviceKind kind() const override { return kind_; }
  MatView prepare_matmul(const MatView& w) override { return upload_matrix(w); }
  MatView prepare_rows(const MatView& w) override { return upload_matrix(w); }
  // One upload of the whole tensor: the slices are contiguous in the file.
  std::vector<MatView> prepare_experts(std::span<const MatView> experts) override {
    if (experts.empty()) return {};
    const MatView& w0 = experts[0];
    const size_t expert_bytes = static_cast<size_t>(w0.rows) * w0.row_stride;
    const auto* host = static_cast<const uint8_t*>(w0.data);
    for (size_t e = 0; e < experts.size(); ++e)
      if (experts[e].data != host + e * expert_bytes || experts[e].layout != WeightLayout::Rows)
        fail(ErrorKind::Internal, "cuda: expert {} is not the next slice of its tensor", e);
    const auto* dev = static_cast<const uint8_t*>(upload(host, expert_bytes * experts.size()));
    std::vector<MatView> out(experts.begin(), experts.end());
    for (size_t e = 0; e < out.size(); ++e) out[e].data = dev + e * expert_bytes;
    return out;
  }
  const float* prepare_vector(const float* v, int64_t n) override {
    return static_cast<const float*>(upload(v, static_cast<size_t>(n) * sizeof(float)));
  }
  size_t copied_bytes() const override { return bytes_; }
  std::string describe() const override { return rt_.describe(); }
  size_t memory_available() const override { return rt_.free_memory(); }

 private:
  MatView upload_matrix(const MatView& w) {
    if (w.layout != WeightLayout::Rows) fail(ErrorKind::Internal, "cuda: weights must be in the file's row layout");
    MatView d = w;
    d.data = upload(w.data, static_cast<size_t>(w.rows) * w.row_stride);
    return d;
  }
  const void* upload(const void* host, size_t bytes) {
    auto it = uploaded_.find(host);
    if (it != uploaded_.end()) return it->second;
    auto mem = std::make_unique<DeviceMemory>(rt_, bytes);
    rt_.upload(mem->data(), host, bytes, nullptr);
    bytes_ += bytes;
    uploaded_[host] = mem->data();
    owned_.push_back(std::move(mem));
    return owned_.back()->data();
  }

  DeviceKind kind_;
  DeviceRuntime& rt_;
  std::vector<std::unique_ptr<DeviceMemory>> owned_;
  std::unordered_map<const void*, const void*> uploaded_;
  size_t bytes_ = 0;
};

}  // namespace

std::unique_ptr<WeightStore> make_weight_store(DeviceKind kind) { return std::make_unique<CudaWeightStore>(kind); }

}  // namespace ember::cuda
