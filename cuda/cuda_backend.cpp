#include "cuda/cuda_backend.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "cuda/device_runtime.h"
#include "cuda/kernel_api.h"
#include "kv/kv_cache.h"
#include "util/error.h"

namespace ember::cuda {
namespace {

DeviceRuntime& runtime_for(DeviceKind kind) { return kind == DeviceKind::Cuda ? gpu_runtime() : host_runtime(); }
const Kernels& kernels_for(DeviceKind kind) { return kind == DeviceKind::Cuda ? gpu_kernels() : cpu_exec_kernels(); }

class DeviceMemory final : public BackendBuffer {
 public:
  DeviceMemory(DeviceRuntime& rt, size_t bytes) : rt_(rt) {
    data_ = rt.allocate(bytes);
    bytes_ = bytes;
  }
  ~DeviceMemory() override { rt_.release(data_); }

 private:
  DeviceRuntime& rt_;
};

// Device memory that grows to the largest size asked of it (workspaces, per-step tables).
class GrowingBuffer {
 public:
  explicit GrowingBuffer(DeviceRuntime& rt) : rt_(rt) {}
  void* reserve(size_t bytes) {
    if (!mem_ || mem_->bytes() < bytes) mem_ = std::make_unique<DeviceMemory>(rt_, bytes);
    return mem_->data();
  }

 private:
  DeviceRuntime& rt_;
  std::unique_ptr<DeviceMemory> mem_;
};

// Weights uploaded once at load. A tensor bound twice (a head tied to the embeddings) is
// uploaded once.
class CudaWeightStore final : public WeightStore {
 public:
  explicit CudaWeightStore(DeviceKind kind) : kind_(kind), rt_(runtime_for(kind)) {}
  DeviceKind kind() const override { return kind_; }
  MatView prepare_matmul(const MatView& w) override { return upload_matrix(w); }
  MatView prepare_rows(const MatView& w) override { return upload_matrix(w); }
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
    rt_.upload(mem->data(), host, bytes);
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

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(DeviceKind kind)
      : kind_(kind), rt_(runtime_for(kind)), k_(kernels_for(kind)), step_ints_(rt_), matmul_ws_(rt_), normed_q8_(rt_),
        attention_ws_(rt_), logits_(rt_), rerope_(rt_) {}

  DeviceKind kind() const override { return kind_; }
  std::string describe() const override { return rt_.describe(); }
  size_t memory_available() const override { return rt_.free_memory(); }
  std::unique_ptr<BackendBuffer> allocate(size_t bytes) override { return std::make_unique<DeviceMemory>(rt_, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override { rt_.copy(dst, src, bytes); }
  void write(void* dst, const void* host, size_t bytes) override { rt_.upload(dst, host, bytes); }
  void read(void* host, const void* src, size_t bytes) override { rt_.download(host, src, bytes); }
  // Workspaces grow on first use to what the shapes need (a few MiB at most).
  size_t scratch_bytes(int, int) const override { return 0; }

  void begin_step(KVCache& kv, const StepInputs& in) override;
  void embed(const MatView& table, float scale, F32Mat x) override {
    k_.get_rows(table, dev_tokens_, in_.n_tokens, x, nullptr);
    if (scale != 1.0f) k_.scale(x, scale, nullptr);
  }
  void rms_norm(const MatView& x, const float* w, float eps, F32Mat y) override { k_.rms_norm(x, w, eps, y, nullptr); }
  void rope(F32Mat x, int head_dim, const RopeParams& p) override { k_.rope(x, head_dim, dev_pos_, p, nullptr); }
  void add(F32Mat a, const MatView& b) override { k_.add(a, b, nullptr); }
  void matmul(const MatView& w, const MatView& x, F32Mat y) override {
    void* ws = matmul_ws_.reserve(k_.matmul_scratch_bytes(w, x.rows));
    k_.matmul(w, x, y, ws, nullptr);
  }
  void matmul_same_input(std::initializer_list<ops::MatmulTarget> targets, const MatmulInput& in) override {
    bool quantised = true;
    for (const ops::MatmulTarget& t : targets) quantised = quantised && is_quantised(t.w.type);
    const MatView x = matmul_input(in, quantised);
    for (const ops::MatmulTarget& t : targets) matmul(t.w, x, t.y);
  }
  void gated_up(Activation act, const MatView& w_gate, const MatView& w_up, const MatmulInput& in, F32Mat, F32Mat,
                F32Mat out) override {
    const MatView x = matmul_input(in, is_quantised(w_gate.type) && is_quantised(w_up.type));
    void* ws = matmul_ws_.reserve(k_.matmul_glu_scratch_bytes(w_gate, x.rows));
    k_.matmul_glu(w_gate, w_up, act == Activation::GELU, x, out, ws, nullptr);
  }
  void rope_store_kv(int layer, F32Mat q, F32Mat k, F32Mat v, int head_dim, const RopeParams& p) override;
  void attention(int layer, const MatView& q, const AttentionParams& p, F32Mat out) override;
  void gather_out_rows(const F32Mat& x, F32Mat out) override {
    k_.get_rows(MatView{DType::F32, x.cols, x.rows, static_cast<size_t>(x.stride) * sizeof(float), x.data},
                dev_out_rows_, in_.n_out, out, nullptr);
  }
  void softcap(F32Mat a, float cap) override { k_.softcap(a, cap, nullptr); }
  F32Mat logits_target(float*, int n_out, int n_vocab) override {
    const size_t n = static_cast<size_t>(n_out) * n_vocab;
    return F32Mat{static_cast<float*>(logits_.reserve(n * sizeof(float))), n_vocab, n_out, n_vocab};
  }
  void finish_logits(const F32Mat& t, float* host) override {
    rt_.download(host, t.data, static_cast<size_t>(t.rows) * t.cols * sizeof(float));
  }
  void rerope_rows(DType type, void* base, size_t row_bytes, int64_t row_elems, int64_t n_rows, const int32_t* rows,
                   int64_t n, int head_dim, int32_t delta, const RopeParams& p) override;

 private:
  // Per sequence run of the step: its rows and, per KV group, its block table on the device.
  struct Run {
    int r0 = 0, r1 = 0;
    std::vector<const int32_t*> blocks;  // per group
  };
  static bool is_quantised(DType t) { return t != DType::F32 && t != DType::F16 && t != DType::BF16; }
  // The matmuls' input: for quantised weights the q8_1 activations of the normalised x come
  // straight from x (rms_norm fused into the quantisation, no f32 round trip); float
  // weights read the normalised rows, computed into in.normed first.
  MatView matmul_input(const MatmulInput& in, bool quantised) {
    if (!in.norm_w) return in.x;
    if (!quantised) {
      k_.rms_norm(in.x, in.norm_w, in.eps, in.normed, nullptr);
      return as_view(in.normed);
    }
    void* xq = normed_q8_.reserve(k_.quantize_normed_bytes(in.x.cols, in.x.rows));
    k_.quantize_normed(in.x, in.norm_w, in.eps, xq, nullptr);
    return MatView{DType::Q8_1, in.x.cols, in.x.rows, dtype_row_bytes(DType::Q8_1, in.x.cols), xq};
  }
  // Host ints staged for one upload; returns the offset of the appended ints.
  size_t stage(const int32_t* v, size_t n) {
    const size_t at = staged_.size();
    staged_.insert(staged_.end(), v, v + n);
    return at;
  }

  DeviceKind kind_;
  DeviceRuntime& rt_;
  const Kernels& k_;
  GrowingBuffer step_ints_, matmul_ws_, normed_q8_, attention_ws_, logits_, rerope_;
  KVCache* kv_ = nullptr;
  StepInputs in_;
  std::vector<int32_t> staged_;
  const int32_t* dev_tokens_ = nullptr;
  const int32_t* dev_pos_ = nullptr;
  const int32_t* dev_out_rows_ = nullptr;
  std::vector<const int32_t*> dev_kv_rows_;  // per group: storage row of each token
  std::vector<Run> runs_;
};

// Uploads everything the step's kernels index by (tokens, positions, output rows, each
// token's KV storage row and each run's block tables) in one copy.
void CudaBackend::begin_step(KVCache& kv, const StepInputs& in) {
  kv_ = &kv;
  in_ = in;
  const int n = in.n_tokens, n_groups = kv.n_groups();

  staged_.clear();
  const size_t tokens_at = stage(in.tokens, n), pos_at = stage(in.pos, n), out_at = stage(in.out_rows, in.n_out);
  std::vector<size_t> rows_at(n_groups);
  for (int g = 0; g < n_groups; ++g) {
    rows_at[g] = staged_.size();
    for (int t = 0; t < n; ++t)
      staged_.push_back(static_cast<int32_t>(kv.storage_row(g, in.seq[t], KVCache::Slot{in.slots[t]})));
  }
  runs_.clear();
  std::vector<std::vector<size_t>> blocks_at;
  for (int r0 = 0; r0 < n;) {
    int r1 = r0 + 1;
    while (r1 < n && in.seq[r1] == in.seq[r0]) ++r1;
    runs_.push_back(Run{r0, r1, {}});
    blocks_at.emplace_back();
    for (int g = 0; g < n_groups; ++g) {
      const std::span<const int32_t> blocks = kv.held_blocks(g, in.seq[r0]);
      blocks_at.back().push_back(stage(blocks.data(), blocks.size()));
    }
    r0 = r1;
  }
  auto* base = static_cast<int32_t*>(step_ints_.reserve(std::max<size_t>(staged_.size(), 1) * sizeof(int32_t)));
  rt_.upload(base, staged_.data(), staged_.size() * sizeof(int32_t));
  dev_tokens_ = base + tokens_at;
  dev_pos_ = base + pos_at;
  dev_out_rows_ = base + out_at;
  dev_kv_rows_.assign(n_groups, nullptr);
  for (int g = 0; g < n_groups; ++g) dev_kv_rows_[g] = base + rows_at[g];
  for (size_t r = 0; r < runs_.size(); ++r)
    for (int g = 0; g < n_groups; ++g) runs_[r].blocks.push_back(base + blocks_at[r][g]);
}

void CudaBackend::rope_store_kv(int layer, F32Mat q, F32Mat k, F32Mat v, int head_dim, const RopeParams& p) {
  const KVView view = kv_->view(layer, in_.seq[0]);
  const int32_t* rows = dev_kv_rows_[kv_->group_of(layer)];
  k_.rope(q, head_dim, dev_pos_, p, nullptr);
  k_.rope_store_rows(k, head_dim, dev_pos_, p, view.k_type, const_cast<void*>(view.k), view.k_row_bytes, rows, nullptr);
  k_.store_rows(as_view(v), view.v_type, const_cast<void*>(view.v), view.v_row_bytes, rows, nullptr);
}

void CudaBackend::attention(int layer, const MatView& q, const AttentionParams& p, F32Mat out) {
  const int g = kv_->group_of(layer);
  for (const Run& run : runs_) {
    const int seq = in_.seq[run.r0];
    const DevKV d = dev_kv(kv_->view(layer, seq), run.blocks[g], kv_->n_tokens(seq));
    const MatView qv{DType::F32, q.cols, run.r1 - run.r0, q.row_stride, q.row(run.r0)};
    const F32Mat ov{out.row(run.r0), out.cols, run.r1 - run.r0, out.stride};
    void* ws = attention_ws_.reserve(k_.attention_scratch_bytes(p, qv.rows, d.n_tokens));
    k_.attention(qv, dev_pos_ + run.r0, d, p, ov, ws, nullptr);
  }
}

void CudaBackend::rerope_rows(DType type, void* base, size_t row_bytes, int64_t row_elems, int64_t n_rows,
                              const int32_t* rows, int64_t n, int head_dim, int32_t delta, const RopeParams& p) {
  // One device block: the row numbers, a delta per row, then the rows as f32.
  const size_t ints = static_cast<size_t>(2 * n);
  const size_t floats_at = (ints * sizeof(int32_t) + 255) / 256 * 256;
  auto* mem = static_cast<uint8_t*>(rerope_.reserve(floats_at + static_cast<size_t>(n * row_elems) * sizeof(float)));
  std::vector<int32_t> host(rows, rows + n);
  host.insert(host.end(), static_cast<size_t>(n), delta);
  rt_.upload(mem, host.data(), ints * sizeof(int32_t));
  const auto* dev_rows = reinterpret_cast<const int32_t*>(mem);
  const F32Mat f{reinterpret_cast<float*>(mem + floats_at), row_elems, n, row_elems};
  k_.get_rows(MatView{type, row_elems, n_rows, row_bytes, base}, dev_rows, n, f, nullptr);
  k_.rope(f, head_dim, dev_rows + n, p, nullptr);
  k_.store_rows(as_view(f), type, base, row_bytes, dev_rows, nullptr);
}

}  // namespace

std::unique_ptr<WeightStore> make_weight_store(DeviceKind kind) { return std::make_unique<CudaWeightStore>(kind); }
std::unique_ptr<Backend> make_backend(DeviceKind kind) { return std::make_unique<CudaBackend>(kind); }

}  // namespace ember::cuda
