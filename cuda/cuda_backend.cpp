#include "backend/cuda_backend.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/device_memory.h"
#include "cuda/device_select.h"
#include "cuda/kernel_api.h"
#include "cuda/step_graphs.h"
#include "cuda/step_staging.h"
#include "util/error.h"

namespace ember::cuda {
namespace {

// EMBER_CUDA_GRAPHS=0 runs every step's kernels one launch at a time (as llama.cpp's
// GGML_CUDA_DISABLE_GRAPHS), for comparisons and debugging.
bool graphs_enabled() {
  const char* v = std::getenv("EMBER_CUDA_GRAPHS");
  return !(v && std::string(v) == "0");
}

// Every op is enqueued on the backend's stream; a step's ops are recorded into a CUDA
// graph or replayed from one (step_graphs.h) when the whole model runs here.
class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(DeviceKind kind)
      : kind_(kind), rt_(device_runtime(kind)), k_(device_kernels(kind)), stream_(rt_.create_stream()),
        graphs_(rt_, stream_, graphs_enabled()), step_ints_(rt_, generation_), matmul_ws_(rt_, generation_),
        normed_q8_(rt_, generation_), attention_ws_(rt_, generation_), logits_(rt_, generation_),
        rerope_(rt_, generation_), moe_ws_(rt_, generation_) {}
  ~CudaBackend() override {
    graphs_.abandon();
    rt_.destroy_stream(stream_);
  }

  DeviceKind kind() const override { return kind_; }
  std::string describe() const override { return rt_.describe(); }
  size_t memory_available() const override { return rt_.free_memory(); }
  std::unique_ptr<BackendBuffer> allocate(size_t bytes) override {
    ++generation_;
    return std::make_unique<DeviceMemory>(rt_, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    outside_graphs();
    rt_.copy(dst, src, bytes, stream_);
  }
  void write(void* dst, const void* host, size_t bytes) override {
    outside_graphs();
    rt_.upload(dst, host, bytes, stream_);
  }
  void read(void* host, const void* src, size_t bytes) override {
    outside_graphs();
    rt_.download(host, src, bytes, stream_);
  }
  // Workspaces grow on first use to what the shapes need (a few MiB at most).
  size_t scratch_bytes(int, int) const override { return 0; }

  void begin_step(const StepKV& kv, const StepInputs& in) override;
  void end_step() override;
  void embed(const MatView& table, float scale, F32Mat x) override {
    if (replayed(Op::Embed, table, x, scale)) return;
    k_.get_rows(table, dev_ints(step_.tokens), step_.shape.n_tokens, x, stream_);
    if (scale != 1.0f) k_.scale(x, scale, stream_);
  }
  void rms_norm(const MatView& x, const float* w, float eps, F32Mat y) override {
    if (replayed(Op::RmsNorm, x, w, y)) return;
    k_.rms_norm(x, w, eps, y, stream_);
  }
  void add(F32Mat a, const MatView& b) override {
    if (replayed(Op::Add, a, b)) return;
    k_.add(a, b, stream_);
  }
  void matmul(const MatView& w, const MatView& x, F32Mat y) override {
    if (replayed(Op::Matmul, w, x, y)) return;
    enqueue_matmul(w, x, y);
  }
  void matmul_same_input(std::initializer_list<ops::MatmulTarget> targets, const MatmulInput& in) override {
    Signature sig(static_cast<uint64_t>(Op::MatmulSameInput));
    for (const ops::MatmulTarget& t : targets) sign(sign(sig, t.w), t.y);
    if (replayed_signed(sign(sig, in))) return;
    bool quantised = true;
    for (const ops::MatmulTarget& t : targets) quantised = quantised && is_quantised(t.w.type);
    const MatView x = matmul_input(in, quantised);
    for (const ops::MatmulTarget& t : targets) enqueue_matmul(t.w, x, t.y);
  }
  void gated_up(Activation act, const MatView& w_gate, const MatView& w_up, const MatmulInput& in, F32Mat, F32Mat,
                F32Mat out) override {
    Signature sig(static_cast<uint64_t>(Op::GatedUp));
    if (replayed_signed(sign(sign(sign(sign(sig, w_gate), w_up), in), out) << static_cast<uint64_t>(act))) return;
    const MatView x = matmul_input(in, is_quantised(w_gate.type) && is_quantised(w_up.type));
    void* ws = matmul_ws_.reserve(k_.matmul_glu_scratch_bytes(w_gate, x.rows));
    k_.matmul_glu(w_gate, w_up, act, x, out, ws, stream_);
  }
  void rope_store_kv(int layer, F32Mat q, F32Mat k, F32Mat v, int head_dim, const RopeParams& p) override;
  void attention(int layer, const MatView& q, const AttentionParams& p, F32Mat out) override;
  void gather_out_rows(const F32Mat& x, F32Mat out) override {
    if (replayed(Op::GatherOut, x, out)) return;
    k_.get_rows(MatView{DType::F32, x.cols, x.rows, static_cast<size_t>(x.stride) * sizeof(float), x.data},
                dev_ints(step_.out_rows), step_.shape.n_out, out, stream_);
  }
  void softcap(F32Mat a, float cap) override {
    if (replayed(Op::Softcap, a, cap)) return;
    k_.softcap(a, cap, stream_);
  }
  F32Mat logits_target(float*, int n_out, int n_vocab) override {
    const size_t n = static_cast<size_t>(n_out) * n_vocab;
    return F32Mat{static_cast<float*>(reserve(logits_, n * sizeof(float))), n_vocab, n_out, n_vocab};
  }
  // Read back at end_step, once the step's graph (if any) is launched.
  void finish_logits(const F32Mat& t, float* host) override {
    pending_logits_ = t;
    pending_host_ = host;
  }
  void rerope_rows(DType type, void* base, size_t row_bytes, int64_t row_elems, int64_t n_rows, const int32_t* rows,
                   int64_t n, int head_dim, int32_t delta, const RopeParams& p) override;

  // Mixture of experts: ids and weights stay in device memory (no host synchronisation).
  void moe_route(const F32Mat& logits, const MoeRouting& r, int32_t* ids, float* weights) override {
    Signature sig(static_cast<uint64_t>(Op::MoeRoute));
    if (replayed_signed(sign(sign(sign(sig, logits), r.selection_bias), r.n_used) << ids << weights)) return;
    k_.moe_route(as_view(logits), r, ids, weights, stream_);
  }
  void gated_up_id(Activation act, std::span<const MatView> w_gate, std::span<const MatView> w_up,
                   const MatmulInput& in, const int32_t* ids, int n_used, F32Mat gate, F32Mat up,
                   F32Mat out) override {
    Signature sig(static_cast<uint64_t>(Op::GatedUpId));
    sign(sign(sign(sign(sign(sign(sig, w_gate[0]), w_up[0]), in), gate), up), out) << ids;
    if (replayed_signed(sig << static_cast<uint64_t>(act) << static_cast<uint64_t>(n_used))) return;
    const ExpertSet g = expert_set(w_gate), u = expert_set(w_up);
    const MatView x = matmul_input(in, is_quantised(g.w0.type) && is_quantised(u.w0.type));
    enqueue_matmul_id(g, x, ids, n_used, gate);
    enqueue_matmul_id(u, x, ids, n_used, up);
    k_.glu(act, as_view(gate), as_view(up), out, stream_);
  }
  void matmul_id(std::span<const MatView> experts, const MatView& x, const int32_t* ids, int n_used,
                 F32Mat y) override {
    Signature sig(static_cast<uint64_t>(Op::MatmulId));
    if (replayed_signed(sign(sign(sign(sig, experts[0]), x), y) << ids << static_cast<uint64_t>(n_used))) return;
    enqueue_matmul_id(expert_set(experts), x, ids, n_used, y);
  }
  // gpt-oss's expert biases, and the gated unit between its biased gate/up and down.
  void add_id(F32Mat a, const MatView& bias, const int32_t* ids) override {
    Signature sig(static_cast<uint64_t>(Op::AddId));
    if (replayed_signed(sign(sign(sig, a), bias) << ids)) return;
    k_.add_id(a, bias, ids, stream_);
  }
  void glu(Activation act, const MatView& gate, const MatView& up, F32Mat out) override {
    Signature sig(static_cast<uint64_t>(Op::Glu));
    if (replayed_signed(sign(sign(sign(sig, gate), up), out) << static_cast<uint64_t>(act))) return;
    k_.glu(act, gate, up, out, stream_);
  }
  void moe_combine(const MatView& experts, const float* weights, int n_used, const MatView& shared,
                   const MatView& shared_gate, F32Mat out) override {
    Signature sig(static_cast<uint64_t>(Op::MoeCombine));
    if (replayed_signed(sign(sign(sign(sign(sig, experts), shared), shared_gate), out) << weights)) return;
    k_.moe_combine(experts, weights, n_used, shared, shared_gate, out, stream_);
  }

 private:
  enum class Op : uint64_t { Embed = 1, RmsNorm, Add, Matmul, MatmulSameInput, GatedUp, RopeStoreKV, Attention,
                             GatherOut, Softcap, MoeRoute, GatedUpId, MatmulId, MoeCombine, AddId, Glu };
  static bool is_quantised(DType t) { return t != DType::F32 && t != DType::F16 && t != DType::BF16; }

  static Signature& sign(Signature& s, const MatView& m) {
    return s << m.data << static_cast<uint64_t>(m.type) << static_cast<uint64_t>(m.rows)
             << static_cast<uint64_t>(m.cols) << static_cast<uint64_t>(m.row_stride);
  }
  static Signature& sign(Signature& s, const F32Mat& m) {
    return s << m.data << static_cast<uint64_t>(m.rows) << static_cast<uint64_t>(m.cols)
             << static_cast<uint64_t>(m.stride);
  }
  static Signature& sign(Signature& s, const MatmulInput& in) { return sign(sign(s, in.x), in.normed) << in.norm_w; }
  static Signature& sign(Signature& s, const float* p) { return s << static_cast<const void*>(p); }
  static Signature& sign(Signature& s, float v) { return s << static_cast<uint64_t>(std::bit_cast<uint32_t>(v)); }
  static Signature& sign(Signature& s, int v) { return s << static_cast<uint64_t>(static_cast<uint32_t>(v)); }
  // True when the op belongs to a replayed step (not enqueued: the graph holds it).
  template <class... A>
  bool replayed(Op op, const A&... args) {
    if (graphs_.direct()) return false;
    Signature s(static_cast<uint64_t>(op));
    (sign(s, args), ...);
    return graphs_.skip(s.value());
  }
  bool replayed_signed(const Signature& s) { return !graphs_.direct() && graphs_.skip(s.value()); }
  // Memory work between steps (rollback, shift, split moves). Ops of a step never do it, so
  // a capture or replay still open here belongs to a step that threw half way: end it.
  void outside_graphs() {
    if (!graphs_.direct()) graphs_.abandon();
  }
  // A workspace; growing one while a stream captures would bake memory about to be freed.
  void* reserve(GrowingBuffer& b, size_t bytes) {
    const uint64_t before = generation_;
    void* p = b.reserve(bytes);
    if (generation_ != before && !graphs_.direct())
      fail(ErrorKind::Internal, "cuda: a workspace grew to {} bytes inside a captured step", bytes);
    return p;
  }
  const int32_t* dev_ints(size_t offset) const { return dev_step_ + offset; }

  void enqueue_matmul(const MatView& w, const MatView& x, F32Mat y) {
    void* ws = reserve(matmul_ws_, k_.matmul_scratch_bytes(w, x.rows));
    k_.matmul(w, x, y, ws, stream_);
  }
  // The experts of one 3-D tensor, which the weight store uploaded evenly spaced.
  static ExpertSet expert_set(std::span<const MatView> experts) {
    if (experts.empty()) fail(ErrorKind::Internal, "cuda matmul_id: no experts");
    ExpertSet e{experts[0], 0, static_cast<int>(experts.size())};
    const auto* base = static_cast<const uint8_t*>(experts[0].data);
    if (experts.size() > 1) e.expert_bytes = static_cast<size_t>(static_cast<const uint8_t*>(experts[1].data) - base);
    for (size_t i = 0; i < experts.size(); ++i)
      if (experts[i].data != base + i * e.expert_bytes || experts[i].type != e.w0.type ||
          experts[i].rows != e.w0.rows || experts[i].cols != e.w0.cols || experts[i].row_stride != e.w0.row_stride)
        fail(ErrorKind::Internal, "cuda matmul_id: expert {} is not one slice of its tensor", i);
    return e;
  }
  void enqueue_matmul_id(const ExpertSet& e, const MatView& x, const int32_t* ids, int n_used, F32Mat y) {
    void* ws = reserve(moe_ws_, k_.matmul_id_scratch_bytes(e, x.rows, y.rows));
    k_.matmul_id(e, x, ids, n_used, y, ws, stream_);
  }
  // The matmuls' input: for quantised weights the q8_1 activations of the normalised x come
  // straight from x (rms_norm fused into the quantisation, no f32 round trip); float
  // weights read the normalised rows, computed into in.normed first.
  MatView matmul_input(const MatmulInput& in, bool quantised) {
    if (!in.norm_w) return in.x;
    if (!quantised) {
      k_.rms_norm(in.x, in.norm_w, in.eps, in.normed, stream_);
      return as_view(in.normed);
    }
    void* xq = reserve(normed_q8_, k_.quantize_normed_bytes(in.x.cols, in.x.rows));
    k_.quantize_normed(in.x, in.norm_w, in.eps, xq, stream_);
    return MatView{DType::Q8_1, in.x.cols, in.x.rows, dtype_row_bytes(DType::Q8_1, in.x.cols), xq};
  }

  DeviceKind kind_;
  DeviceRuntime& rt_;
  const Kernels& k_;
  Stream stream_;
  uint64_t generation_ = 0;  // counts reallocations of memory a graph may point to
  StepGraphs graphs_;
  GrowingBuffer step_ints_, matmul_ws_, normed_q8_, attention_ws_, logits_, rerope_, moe_ws_;
  const StepKV* kv_ = nullptr;
  StagedStep step_;
  const int32_t* dev_step_ = nullptr;  // step_.ints on the device
  F32Mat pending_logits_{};
  float* pending_host_ = nullptr;
};

// Uploads everything the step's kernels index by in one copy, then lets the step graphs
// decide: run, capture or replay. Graphs only when every layer's KV lives here (a split
// model moves activations through the host mid-step).
void CudaBackend::begin_step(const StepKV& kv, const StepInputs& in) {
  graphs_.abandon();  // a step that failed half way
  kv_ = &kv;
  pending_host_ = nullptr;
  stage_step(kv, in, step_);
  const size_t bytes = std::max<size_t>(step_.ints.size(), 1) * sizeof(int32_t);
  dev_step_ = static_cast<const int32_t*>(step_ints_.reserve(bytes));
  rt_.upload(const_cast<int32_t*>(dev_step_), step_.ints.data(), step_.ints.size() * sizeof(int32_t), stream_);
  if (kv.all_layers_in(this))
    graphs_.begin(step_.shape, generation_);
}

void CudaBackend::end_step() {
  graphs_.end();
  if (pending_host_) {
    const F32Mat& t = pending_logits_;
    rt_.download(pending_host_, t.data, static_cast<size_t>(t.rows) * t.cols * sizeof(float), stream_);
    pending_host_ = nullptr;
  }
}

void CudaBackend::rope_store_kv(int layer, F32Mat q, F32Mat k, F32Mat v, int head_dim, const RopeParams& p) {
  if (replayed(Op::RopeStoreKV, layer, q, k, v, head_dim)) return;
  const KVLayerStorage& s = kv_->layers[layer];
  const int32_t* rows = dev_ints(step_.kv_rows[s.group]);
  const int32_t* pos = dev_ints(step_.pos);
  k_.rope(q, head_dim, pos, p, stream_);
  k_.rope_store_rows(k, head_dim, pos, p, s.k_type, s.k, s.k_row_bytes, rows, stream_);
  k_.store_rows(as_view(v), s.v_type, s.v, s.v_row_bytes, rows, stream_);
}

// Every sequence run in one launch, each over its own table; the launch depends on the
// tables' capacity and the runs' lengths, not on how much of a table a sequence holds.
void CudaBackend::attention(int layer, const MatView& q, const AttentionParams& p, F32Mat out) {
  if (replayed(Op::Attention, layer, q, out)) return;
  const int g = kv_->layers[layer].group;
  const KVView view = kv_->view(layer, 0);  // the layer's storage (any sequence's view names it)
  const DevKV d = dev_kv(view, dev_ints(step_.group_table(g)), step_.table_blocks, step_.table_stride());
  const DevRuns runs{dev_ints(step_.run_bounds), static_cast<int>(step_.shape.run_lengths.size()), step_.max_run_rows};
  void* ws = reserve(attention_ws_, k_.attention_scratch_bytes(p, q.rows, runs.max_rows, d.capacity));
  k_.attention(q, dev_ints(step_.pos), runs, d, p, out, ws, stream_);
}

void CudaBackend::rerope_rows(DType type, void* base, size_t row_bytes, int64_t row_elems, int64_t n_rows,
                              const int32_t* rows, int64_t n, int head_dim, int32_t delta, const RopeParams& p) {
  outside_graphs();
  // One device block: the row numbers, a delta per row, then the rows as f32.
  const size_t ints = static_cast<size_t>(2 * n);
  const size_t floats_at = (ints * sizeof(int32_t) + 255) / 256 * 256;
  auto* mem = static_cast<uint8_t*>(rerope_.reserve(floats_at + static_cast<size_t>(n * row_elems) * sizeof(float)));
  std::vector<int32_t> host(rows, rows + n);
  host.insert(host.end(), static_cast<size_t>(n), delta);
  rt_.upload(mem, host.data(), ints * sizeof(int32_t), stream_);
  const auto* dev_rows = reinterpret_cast<const int32_t*>(mem);
  const F32Mat f{reinterpret_cast<float*>(mem + floats_at), row_elems, n, row_elems};
  k_.get_rows(MatView{type, row_elems, n_rows, row_bytes, base}, dev_rows, n, f, stream_);
  k_.rope(f, head_dim, dev_rows + n, p, stream_);
  k_.store_rows(as_view(f), type, base, row_bytes, dev_rows, stream_);
}

}  // namespace

std::unique_ptr<Backend> make_backend(DeviceKind kind) { return std::make_unique<CudaBackend>(kind); }

}  // namespace ember::cuda
