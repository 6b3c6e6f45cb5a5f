#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "util/memory.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace ember {

MatView CpuWeightStore::prepare_matmul(const MatView& w) {
  if (!repack_) return w;
  std::optional<PackedWeight> p = ops::pack_weight(w, &arena_);
  if (!p) return w;
  packed_.push_back(std::move(*p));
  return packed_.back().view;
}

size_t CpuWeightStore::memory_available() const { return system_memory().available; }

std::vector<MatView> CpuWeightStore::repacked_matrices() const {
  std::vector<MatView> out;
  for (const PackedWeight& p : packed_) out.push_back(p.view);
  return out;
}

size_t CpuWeightStore::copied_bytes() const {
  size_t n = 0;
  for (const PackedWeight& p : packed_) n += p.bytes;
  return n;
}

namespace {

class HostBuffer final : public BackendBuffer {
 public:
  explicit HostBuffer(size_t bytes) {
    // 64-byte aligned, as the SIMD kernels' aligned loads of KV rows and activations expect.
    bytes_ = bytes;
    data_ = bytes ? std::aligned_alloc(64, (bytes + 63) / 64 * 64) : nullptr;
    if (bytes && !data_) fail(ErrorKind::OutOfMemory, "cannot allocate {} bytes of host memory", bytes);
    if (data_) std::memset(data_, 0, bytes);
  }
  ~HostBuffer() override { std::free(data_); }
};

}  // namespace

std::string CpuBackend::describe() const { return fmt::format("cpu ({} threads)", pool_.size()); }
size_t CpuBackend::memory_available() const { return system_memory().available; }
std::unique_ptr<BackendBuffer> CpuBackend::allocate(size_t bytes) { return std::make_unique<HostBuffer>(bytes); }
void CpuBackend::copy(void* dst, const void* src, size_t bytes) { std::memmove(dst, src, bytes); }

void CpuBackend::begin_step(const StepKV& kv, const StepInputs& in) {
  kv_ = &kv;
  in_ = in;
}

void CpuBackend::embed(const MatView& table, float scale, F32Mat x) {
  ops::get_rows(pool_, table, in_.tokens, in_.n_tokens, x);
  if (scale != 1.0f) ops::scale(pool_, x, scale);
}

void CpuBackend::rms_norm(const MatView& x, const float* w, float eps, F32Mat y) {
  ops::rms_norm(pool_, x, w, eps, false, y);
}
void CpuBackend::add(F32Mat a, const MatView& b) { ops::add(pool_, a, b); }
void CpuBackend::matmul(const MatView& w, const MatView& x, F32Mat y) { ops::matmul(pool_, w, x, y); }
MatView CpuBackend::normalised(const MatmulInput& in) {
  if (!in.norm_w) return in.x;
  ops::rms_norm(pool_, in.x, in.norm_w, in.eps, false, in.normed);
  return as_view(in.normed);
}

void CpuBackend::matmul_same_input(std::initializer_list<ops::MatmulTarget> targets, const MatmulInput& x) {
  ops::matmul_same_input(pool_, targets, normalised(x));
}

void CpuBackend::gated_up(Activation act, const MatView& w_gate, const MatView& w_up, const MatmulInput& x, F32Mat gate,
                          F32Mat up, F32Mat out) {
  ops::matmul_same_input(pool_, {{w_gate, gate}, {w_up, up}}, normalised(x));
  ops::glu(pool_, act, as_view(gate), as_view(up), out);
}

void CpuBackend::moe_route(const F32Mat& logits, const MoeRouting& r, int32_t* ids, float* weights) {
  ops::moe_route(as_view(logits), r, ids, weights);
}

void CpuBackend::gated_up_id(Activation act, std::span<const MatView> w_gate, std::span<const MatView> w_up,
                             const MatmulInput& x, const int32_t* ids, int n_used, F32Mat gate, F32Mat up, F32Mat out) {
  ops::matmul_id(pool_, {{w_gate, gate}, {w_up, up}}, normalised(x), ids, n_used);
  ops::glu(pool_, act, as_view(gate), as_view(up), out);
}

void CpuBackend::matmul_id(std::span<const MatView> experts, const MatView& x, const int32_t* ids, int n_used, F32Mat y) {
  ops::matmul_id(pool_, {{experts, y}}, x, ids, n_used);
}

void CpuBackend::add_id(F32Mat a, const MatView& bias, const int32_t* ids) { ops::add_id(pool_, a, bias, ids); }

void CpuBackend::glu(Activation act, const MatView& gate, const MatView& up, F32Mat out) {
  ops::glu(pool_, act, gate, up, out);
}

void CpuBackend::moe_combine(const MatView& experts, const float* weights, int n_used, const MatView& shared,
                             const MatView& shared_gate, F32Mat out) {
  ops::moe_combine(pool_, experts, weights, n_used, shared, shared_gate, out);
}

void CpuBackend::rope_store_kv(int layer, F32Mat q, F32Mat k, F32Mat v, int head_dim, const RopeParams& p) {
  ops::rope(pool_, q, head_dim, in_.pos, p);
  ops::rope(pool_, k, head_dim, in_.pos, p);
  const KVLayerStorage& s = kv_->layers[layer];
  for (int t = 0; t < in_.n_tokens; ++t) {
    const int64_t row = kv_->row(s.group, t);
    ops::store_row(k.row(t), k.cols, s.k_type, static_cast<uint8_t*>(s.k) + row * s.k_row_bytes);
    ops::store_row(v.row(t), v.cols, s.v_type, static_cast<uint8_t*>(s.v) + row * s.v_row_bytes);
  }
}

void CpuBackend::attention(int layer, const MatView& q, const AttentionParams& p, F32Mat out) {
  for (int r0 = 0; r0 < in_.n_tokens;) {
    int r1 = r0 + 1;
    while (r1 < in_.n_tokens && in_.seq[r1] == in_.seq[r0]) ++r1;
    const MatView qv{DType::F32, q.cols, r1 - r0, q.row_stride, q.row(r0)};
    const F32Mat ov{out.row(r0), out.cols, r1 - r0, out.stride};
    ops::attention(pool_, qv, in_.pos + r0, kv_->view(layer, in_.seq[r0]), p, ov);
    r0 = r1;
  }
}

void CpuBackend::gather_out_rows(const F32Mat& x, F32Mat out) {
  for (int i = 0; i < in_.n_out; ++i) std::copy_n(x.row(in_.out_rows[i]), x.cols, out.row(i));
}

void CpuBackend::softcap(F32Mat a, float cap) {
  // a = cap * tanh(a / cap)  (Gemma 2 style final soft-capping)
  for (int64_t r = 0; r < a.rows; ++r)
    for (int64_t i = 0; i < a.cols; ++i) a.row(r)[i] = cap * std::tanh(a.row(r)[i] / cap);
}

F32Mat CpuBackend::logits_target(float* host, int n_out, int n_vocab) { return F32Mat{host, n_vocab, n_out, n_vocab}; }

void CpuBackend::rerope_rows(DType type, void* base, size_t row_bytes, int64_t row_elems, int64_t n_rows,
                             const int32_t* rows, int64_t n, int head_dim, int32_t delta, const RopeParams& p) {
  std::vector<float> buf(static_cast<size_t>(n * row_elems));
  std::vector<int32_t> deltas(static_cast<size_t>(n), delta);
  uint8_t* k = static_cast<uint8_t*>(base);
  const MatView table{type, row_elems, n_rows, row_bytes, k};
  const F32Mat f{buf.data(), row_elems, n, row_elems};
  ops::get_rows(pool_, table, rows, n, f);
  ops::rope(pool_, f, head_dim, deltas.data(), p);
  for (int64_t r = 0; r < n; ++r) ops::store_row(f.row(r), row_elems, type, k + rows[r] * row_bytes);
}

}  // namespace ember
