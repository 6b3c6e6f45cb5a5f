// The seam between the forward pass and the hardware. A model's weights live in a
// WeightStore (prepared once at load: the CPU repacks, CUDA uploads); each Context computes
// through a Backend, which owns the activation and KV memory and executes the forward's
// vocabulary (embed, norms, RoPE, matmul, GLU, KV store, attention, logits). Step
// (model/layers.h) speaks only to these; architecture files never know the device.
//
// Pointers inside views given to a Backend are its own memory (host for the CPU, device
// for CUDA) unless a parameter says "host".
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/kv_memory.h"
#include "backend/kv_view.h"
#include "backend/ops.h"

namespace ember {

class ThreadPool;

// Where a model runs. CudaOnCpu is the CUDA backend with its kernels' own source run on the
// CPU (cuda/cpu_exec): slow, for tests and for checking kernels without a GPU.
enum class DeviceKind { Cpu, Cuda, CudaOnCpu };
const char* device_kind_name(DeviceKind kind);

// A model's weights as one device computes with them (views into the mapped file, or copies).
class WeightStore {
 public:
  virtual ~WeightStore() = default;
  virtual DeviceKind kind() const = 0;
  // A matrix matmul reads (CPU: the repacked copy where its kernels read one faster).
  virtual MatView prepare_matmul(const MatView& w) = 0;
  // A matrix whose rows get_rows reads (token embeddings).
  virtual MatView prepare_rows(const MatView& w) = 0;
  virtual const float* prepare_vector(const float* v, int64_t n) = 0;
  // The experts of one 3-D tensor, in order, each a slice of it (model/weights.cpp). A
  // device keeps them as one allocation, expert e at data + e * (bytes of one expert), so
  // its kernels reach an expert by its id.
  virtual std::vector<MatView> prepare_experts(std::span<const MatView> experts) {
    std::vector<MatView> out;
    for (const MatView& w : experts) out.push_back(prepare_matmul(w));
    return out;
  }
  virtual size_t copied_bytes() const = 0;  // of the weights, held outside the file mapping
  // The matrices it repacked for the CPU kernels (what kernel calibration measures on).
  virtual std::vector<MatView> repacked_matrices() const { return {}; }
  virtual std::string describe() const = 0;         // where: "cpu", "cuda:0 NVIDIA H200 (...)"
  virtual size_t memory_available() const = 0;      // bytes that copies may still take
};

// The input of the matmuls of a block: x itself, or, when norm_w is set, rms_norm(x) * norm_w
// (eps), which a backend writes to `normed` unless it feeds the matmuls straight from x
// (CUDA's quantised weights: the norm goes into the 8-bit activations in one pass).
struct MatmulInput {
  MatView x;
  const float* norm_w = nullptr;
  float eps = 0.0f;
  F32Mat normed;
};

// One ubatch as the context laid it out on the host: row t is token tokens[t] of sequence
// seq[t] at position pos[t], stored in KV ordinal slots[t]; logits are wanted for out_rows.
struct StepInputs {
  int n_tokens = 0;
  const int32_t* tokens = nullptr;
  const int32_t* pos = nullptr;
  const int32_t* seq = nullptr;
  const int64_t* slots = nullptr;
  int n_out = 0;
  const int32_t* out_rows = nullptr;
};

// The memory part (allocate, copy, rerope_rows) is KVMemory's, which the KV cache reads.
class Backend : public KVMemory {
 public:
  virtual DeviceKind kind() const = 0;
  virtual std::string describe() const = 0;      // "cpu (2 threads)", "cuda:0 NVIDIA H200"
  virtual size_t memory_available() const = 0;   // bytes a plan may still take (0 = unknown)

  // --- memory ---
  virtual void write(void* dst, const void* host, size_t bytes) = 0;  // host memory into this backend's
  virtual void read(void* host, const void* src, size_t bytes) = 0;   // back, after the work before it
  // Scratch for steps of up to n_ubatch tokens against caches of up to n_ctx tokens, beyond
  // the activations Step plans (matmul and attention workspaces).
  virtual size_t scratch_bytes(int n_ubatch, int n_ctx) const = 0;

  // --- one ubatch: begin_step, then the forward's ops, in order, then end_step ---
  virtual void begin_step(const StepKV& kv, const StepInputs& in) = 0;
  // The step's work is all enqueued and its logits are in host memory when this returns.
  virtual void end_step() = 0;
  virtual void embed(const MatView& table, float scale, F32Mat x) = 0;    // x[t] = table[tokens[t]] * scale
  virtual void rms_norm(const MatView& x, const float* w, float eps, F32Mat y) = 0;
  virtual void add(F32Mat a, const MatView& b) = 0;                       // b.rows == 1 broadcasts
  virtual void matmul(const MatView& w, const MatView& x, F32Mat y) = 0;
  virtual void matmul_same_input(std::initializer_list<ops::MatmulTarget> targets, const MatmulInput& x) = 0;
  // out = act(x w_gate^T) * (x w_up^T); gate and up hold the two products where a backend
  // computes them apart (the CPU), a fused kernel never writes them (CUDA).
  virtual void gated_up(Activation act, const MatView& w_gate, const MatView& w_up, const MatmulInput& x, F32Mat gate,
                        F32Mat up, F32Mat out) = 0;
  // q and k rotated for their positions, then every token's K (rotated) and V rows into its
  // slot of layer `layer` (CUDA rotates and stores k in one pass).
  virtual void rope_store_kv(int layer, F32Mat q, F32Mat k, F32Mat v, int head_dim, const RopeParams& p) = 0;
  // Causal attention of each run of same-sequence rows over its sequence's cache.
  virtual void attention(int layer, const MatView& q, const AttentionParams& p, F32Mat out) = 0;
  // out[i] = x[out_rows[i]]
  virtual void gather_out_rows(const F32Mat& x, F32Mat out) = 0;
  virtual void softcap(F32Mat a, float cap) = 0;
  // Where the step's logits are computed (n_out x n_vocab) and how they reach `host`:
  // the CPU computes straight into host memory, CUDA into a device buffer read back by
  // end_step.
  virtual F32Mat logits_target(float* host, int n_out, int n_vocab) = 0;
  virtual void finish_logits(const F32Mat& target, float* host) = 0;

  // --- mixture of experts (model/moe.cpp); ids and weights live in this backend's memory ---
  // The backends that have no MoE path yet refuse each of these in one line.
  // ids/weights (tokens x r.n_used) from the router logits (tokens x r.n_expert): ops::moe_route.
  virtual void moe_route(const F32Mat& logits, const MoeRouting& r, int32_t* ids, float* weights);
  // gated_up through each row's chosen experts: row t*n_used + j of gate, up and out uses
  // expert ids[t*n_used + j] on x's row t (ops::matmul_id).
  virtual void gated_up_id(Activation act, std::span<const MatView> w_gate, std::span<const MatView> w_up,
                           const MatmulInput& x, const int32_t* ids, int n_used, F32Mat gate, F32Mat up, F32Mat out);
  // y = ops::matmul_id over one expert projection (x one row per token or per slot).
  virtual void matmul_id(std::span<const MatView> experts, const MatView& x, const int32_t* ids, int n_used, F32Mat y);
  // a[r] += bias[ids[r]]: each slot row gets its expert's bias (ops::add_id; gpt-oss).
  virtual void add_id(F32Mat a, const MatView& bias, const int32_t* ids);
  // out = act(gate) * up on rows already computed (the biased experts' gate and up: ops::glu).
  virtual void glu(Activation act, const MatView& gate, const MatView& up, F32Mat out);
  // out = the weighted sum of each token's expert rows (+ the gated shared expert): ops::moe_combine.
  virtual void moe_combine(const MatView& experts, const float* weights, int n_used, const MatView& shared,
                           const MatView& shared_gate, F32Mat out);
};

// Where a model's layers run: layers [first_device_layer, n_layer) on `device`, the ones
// before on the CPU. The token embedding goes with layer 0, the output head with the last
// layer (as llama.cpp: -ngl N offloads the last N layers).
struct Placement {
  DeviceKind device = DeviceKind::Cpu;
  int first_device_layer = 0;  // n_layer when every layer stays on the CPU
  int n_layer = 0;
  DeviceKind layer(int il) const { return il >= first_device_layer ? device : DeviceKind::Cpu; }
  bool split() const { return device != DeviceKind::Cpu && first_device_layer > 0 && first_device_layer < n_layer; }
};

// The placement of a model of n_layer layers for `-ngl gpu_layers` (llama.cpp's flag): 0 the
// CPU; -1 (flag absent) every layer on the CUDA device when there is one, else the CPU;
// n >= n_layer every layer on the device; 0 < n < n_layer the last n layers. A CUDA device
// is device 0, or the CPU execution of the kernels when the environment sets
// EMBER_CUDA_ON_CPU=1. Throws Unsupported for n > 0 without a device, naming why.
Placement choose_placement(int gpu_layers, int n_layer);

std::unique_ptr<WeightStore> make_weight_store(DeviceKind kind, bool repack);
std::unique_ptr<Backend> make_backend(DeviceKind kind, ThreadPool& pool);

}  // namespace ember
