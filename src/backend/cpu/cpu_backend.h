// The CPU backend: ops.h on the host with a thread pool; weights repacked for the SIMD
// kernels (or read in place from the mapping), activations and KV cache in host memory.
#pragma once
#include <vector>

#include "backend/backend.h"
#include "util/stream_buffer.h"

namespace ember {

class CpuWeightStore final : public WeightStore {
 public:
  explicit CpuWeightStore(bool repack) : repack_(repack) {}
  DeviceKind kind() const override { return DeviceKind::Cpu; }
  MatView prepare_matmul(const MatView& w) override;
  MatView prepare_rows(const MatView& w) override { return w; }
  const float* prepare_vector(const float* v, int64_t) override { return v; }
  size_t copied_bytes() const override;
  std::vector<MatView> repacked_matrices() const override;
  std::string describe() const override { return "cpu"; }
  size_t memory_available() const override;

 private:
  bool repack_;
  std::vector<PackedWeight> packed_;
  StreamArena arena_;  // the small packed matrices (experts), on huge pages
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(ThreadPool& pool) : pool_(pool) {}
  DeviceKind kind() const override { return DeviceKind::Cpu; }
  std::string describe() const override;
  size_t memory_available() const override;
  std::unique_ptr<BackendBuffer> allocate(size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void write(void* dst, const void* host, size_t bytes) override { copy(dst, host, bytes); }
  void read(void* host, const void* src, size_t bytes) override { copy(host, src, bytes); }
  size_t scratch_bytes(int, int) const override { return 0; }

  void begin_step(const StepKV& kv, const StepInputs& in) override;
  void embed(const MatView& table, float scale, F32Mat x) override;
  void rms_norm(const MatView& x, const float* w, float eps, F32Mat y) override;
  void add(F32Mat a, const MatView& b) override;
  void matmul(const MatView& w, const MatView& x, F32Mat y) override;
  void matmul_same_input(std::initializer_list<ops::MatmulTarget> targets, const MatmulInput& x) override;
  void gated_up(Activation act, const MatView& w_gate, const MatView& w_up, const MatmulInput& x, F32Mat gate, F32Mat up,
                F32Mat out) override;
  void rope_store_kv(int layer, F32Mat q, F32Mat k, F32Mat v, int head_dim, const RopeParams& p) override;
  void attention(int layer, const MatView& q, const AttentionParams& p, F32Mat out) override;
  void gather_out_rows(const F32Mat& x, F32Mat out) override;
  void softcap(F32Mat a, float cap) override;
  F32Mat logits_target(float* host, int n_out, int n_vocab) override;
  void finish_logits(const F32Mat&, float*) override {}
  void end_step() override {}
  void moe_route(const F32Mat& logits, const MoeRouting& r, int32_t* ids, float* weights) override;
  void gated_up_id(Activation act, std::span<const MatView> w_gate, std::span<const MatView> w_up, const MatmulInput& x,
                   const int32_t* ids, int n_used, F32Mat gate, F32Mat up, F32Mat out) override;
  void matmul_id(std::span<const MatView> experts, const MatView& x, const int32_t* ids, int n_used, F32Mat y) override;
  void add_id(F32Mat a, const MatView& bias, const int32_t* ids) override;
  void glu(Activation act, const MatView& gate, const MatView& up, F32Mat out) override;
  void moe_combine(const MatView& experts, const float* weights, int n_used, const MatView& shared,
                   const MatView& shared_gate, F32Mat out) override;
  void rerope_rows(DType type, void* base, size_t row_bytes, int64_t row_elems, int64_t n_rows, const int32_t* rows,
                   int64_t n, int head_dim, int32_t delta, const RopeParams& p) override;

 private:
  MatView normalised(const MatmulInput& in);  // in.x, or its norm computed into in.normed
  ThreadPool& pool_;
  const StepKV* kv_ = nullptr;
  StepInputs in_;
};

}  // namespace ember
