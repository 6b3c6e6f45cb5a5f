// The model API: load a GGUF (weights memory-mapped, zero copy), then run batches of
// (token, position, sequence) through a Context that owns the KV cache and scratch memory.
//
//   auto model = ember::Model::load("tiny.gguf", {.n_threads = 2});
//   ember::ThreadPool pool(2);
//   ember::Context ctx(*model, {.n_ctx = 512}, pool);
//   ember::Batch b;
//   for (int i = 0; i < n; ++i) b.add(prompt[i], /*pos=*/i, /*seq=*/0, /*logits=*/i == n - 1);
//   std::span<const float> logits = ctx.decode(b);   // 1 x n_vocab
//
// Architectures live one per file under src/model/ (arch_llama.cpp, ...), see arch.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/ops.h"
#include "tensor/dtype.h"

namespace ember {

namespace gguf { class File; }
class ThreadPool;
class KVCache;
struct ArchModel;  // architecture-specific weights + forward (model/arch.h)

// Hyperparameters as read from GGUF metadata (keys "<arch>.<name>"). Every field that is
// not per-layer is the same for all layers.
struct Hparams {
  std::string arch;          // general.architecture: "llama", "qwen2", "qwen3", "gemma3"
  std::string name;          // general.name (informational, may be empty)
  int n_vocab = 0;           // tokens; rows of token_embd
  int n_embd = 0;            // model width (elements of the residual stream)
  int n_layer = 0;           // transformer blocks
  int n_head = 0;            // query heads
  int n_head_kv = 0;         // key/value heads (GQA: n_head % n_head_kv == 0)
  int head_dim = 0;          // elements per query/key head (attention.key_length, default n_embd/n_head)
  int head_dim_v = 0;        // elements per value head (attention.value_length, default head_dim)
  std::vector<int> n_ff;     // [n_layer] FFN hidden width per layer (feed_forward_length, scalar or array)
  int n_ctx_train = 0;       // tokens; context_length the model was trained with
  float norm_eps = 1e-5f;    // RMS-norm epsilon (attention.layer_norm_rms_epsilon)

  // RoPE
  int n_rot = 0;             // rotated dims per head (rope.dimension_count, default head_dim)
  bool rope_neox = false;    // half-split pairs (qwen2/qwen3/gemma3) vs adjacent pairs (llama)
  float rope_freq_base = 10000.0f;      // global-attention layers
  float rope_freq_scale = 1.0f;         // 1/rope.scaling.factor (types "linear" and "yarn")
  // YaRN and LongRoPE (model/hparams.cpp reads them as llama.cpp does; rope_params applies them)
  float rope_ext_factor = 0.0f;         // YaRN's mix of unscaled angles: 1 for type "yarn", else 0
  float rope_beta_fast = 32.0f;         // YaRN ramp ends (rope.scaling.yarn_beta_fast/slow)
  float rope_beta_slow = 1.0f;
  int n_ctx_orig = 0;                   // tokens; rope.scaling.original_context_length (default
                                        // n_ctx_train): YaRN's ramp, LongRoPE's long/short choice
  float rope_attn_factor = 1.0f;        // llama.cpp's yarn_attn_factor (rope.scaling.attn_factor,
                                        // YaRN's correction); cos/sin magnitude, see rope_params
  // A family's own settings (sliding windows, soft-caps, per-layer RoPE) its file reads
  // itself; how each layer attends is ArchModel::attention (model/arch.h).

  // Mixture of experts (model/moe.h); n_expert == 0: every layer has a dense FFN.
  int n_expert = 0;          // experts per MoE layer (expert_count)
  int n_expert_used = 0;     // experts each token runs (expert_used_count)
  int n_ff_exp = 0;          // elements; an expert's FFN hidden width (expert_feed_forward_length)
  int n_ff_shexp = 0;        // elements; the shared expert's hidden width, 0 = no shared expert
  MoeRouting moe_routing;    // how the family picks and weighs experts (set by its read_hparams)
  Activation moe_act = Activation::SiLU;  // the experts' gated unit (set by its read_hparams)

  int n_embd_k_gqa() const { return n_head_kv * head_dim; }   // K row elements per token per layer
  int n_embd_v_gqa() const { return n_head_kv * head_dim_v; } // V row elements per token per layer
};

struct LoadOptions {
  int n_threads = 1;                        // only for informational output / future use
  bool print_plan = true;                   // print the weight memory line to stderr
  std::function<void(float)> progress;      // called with 0..1 while touching weights (may be empty)
  // Copy the matmul weights whose type the CPU kernels read faster interleaved (as
  // llama.cpp's repack does) into anonymous memory at load; false keeps every weight in
  // the mapping (zero copy, --no-repack).
  bool repack = true;
  // Layers on the CUDA device (-ngl): 0 none, -1 all when there is a device, N the last N;
  // see choose_placement in backend/backend.h. Their weights live, and compute, there.
  int gpu_layers = 0;
};

class Model {
 public:
  // Opens and validates `path`: architecture known, every required tensor present with the
  // expected type family and shape. Throws Error(Io/Format/Unsupported) naming what failed.
  static std::unique_ptr<Model> load(const std::string& path, const LoadOptions& opts = {});
  ~Model();

  const Hparams& hparams() const { return hp_; }
  const gguf::File& gguf() const { return *file_; }
  size_t weight_bytes() const { return weight_bytes_; }  // bytes of all tensors in the file
  size_t repacked_bytes() const;  // of them, copied at load (CPU kernels' layout, or the device)
  size_t device_weight_bytes() const;  // of them, on the CUDA device
  std::vector<MatView> cpu_repacked_matrices() const;  // the CPU layers' repacked weights
  const Placement& placement() const { return placement_; }
  DeviceKind device() const { return placement_.device; }  // Cpu when no layer is offloaded
  const ArchModel& arch() const { return *arch_; }
  // One line per tensor type: "q4_0: 155 tensors, 600.1 MiB" (for `inspect` / plans).
  std::string describe() const;

 private:
  Model() = default;
  Hparams hp_;
  std::unique_ptr<gguf::File> file_;
  std::unique_ptr<ArchModel> arch_;
  Placement placement_;
  std::unique_ptr<WeightStore> host_weights_, device_weights_;  // own the copies the arch's views point into
  size_t weight_bytes_ = 0;
};

// What happens when a sequence would grow past n_ctx tokens.
enum class ContextPolicy {
  Error,  // throw Error(ContextFull) naming the sequence and token counts (default)
  Shift,  // drop the oldest (n_past - n_keep) / 2 tokens after the first n_keep, slide the
          // rest down (K re-rotated to its new position), continue; positions of later
          // tokens are then smaller than their count (kv_next_pos tells the next one)
};

struct ContextOptions {
  int n_ctx = 0;            // tokens per sequence; 0 = min(n_ctx_train, 4096)
  int n_batch = 2048;       // max tokens one decode() call accepts
  int n_ubatch = 512;       // tokens per forward pass (a batch runs in chunks of this)
  DType k_type = DType::F16;  // a KV type of backend/kv_types.h (-ctk)
  DType v_type = DType::F16;  // (-ctv)
  int n_seq = 1;            // independent sequences (each has its own block tables)
  int kv_blocks = 0;        // KV pool blocks (kv/kv_cache.h) of 32 tokens; 0 = every sequence at n_ctx
  bool prefix_cache = true; // full blocks are kept for prompts that start alike (kv_attach_prefix)
  ContextPolicy policy = ContextPolicy::Error;
  int n_keep = 0;           // tokens kept at the start under ContextPolicy::Shift
  bool print_plan = true;   // print the memory plan (weights, KV, scratch) to stderr
  // Refuse with Error(OutOfMemory) when weights + KV + scratch exceed this many bytes;
  // 0 = the machine's available memory (MemAvailable + the file's already-mapped pages).
  size_t memory_limit = 0;
};

// A batch of tokens for one decode() call. Rows of one sequence must carry consecutive
// positions continuing that sequence (pos -1 = "next position of this sequence").
struct Batch {
  std::vector<int32_t> tokens;
  std::vector<int32_t> pos;
  std::vector<int32_t> seq;
  std::vector<uint8_t> want_logits;

  void add(int32_t token, int32_t position, int32_t sequence, bool logits) {
    tokens.push_back(token);
    pos.push_back(position);
    seq.push_back(sequence);
    want_logits.push_back(logits ? 1 : 0);
  }
  void clear() { tokens.clear(); pos.clear(); seq.clear(); want_logits.clear(); }
  size_t size() const { return tokens.size(); }
  int n_outputs() const;
};

// Memory the context plans once; decode() then allocates nothing per step (the logits
// buffer grows once to the largest number of requested rows).
struct MemoryPlan {
  size_t weight_bytes = 0;   // mapped GGUF tensor data
  size_t kv_bytes = 0;       // all layers, all sequences, K and V
  size_t scratch_bytes = 0;  // activations for one ubatch + one logits row
  size_t available = 0;      // what the plan was checked against
  size_t total() const { return weight_bytes + kv_bytes + scratch_bytes; }
};

class Context {
 public:
  Context(const Model& model, const ContextOptions& opts, ThreadPool& pool);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Runs the batch through the model in chunks of n_ubatch tokens, appending every token to
  // its sequence's KV cache. Returns n_out x n_vocab logits (row-major) for the rows with
  // want_logits set, in batch order; valid until the next decode(). Throws
  // Error(InvalidArgument) for bad tokens/positions/sequences, Error(ContextFull) per policy.
  std::span<const float> decode(const Batch& batch);

  void kv_clear(int seq = -1);                 // -1: all sequences
  void kv_rollback(int seq, int n_tokens);     // forget the last n_tokens of seq
  int kv_next_pos(int seq) const;              // position the next token of seq gets
  int kv_n_tokens(int seq) const;              // tokens currently held for seq
  // One context shift of seq, as ContextPolicy::Shift does it: drops the oldest
  // (n_tokens - n_keep) / 2 tokens after the first n_keep (at least one); returns how many.
  int kv_shift(int seq);
  // Gives an empty seq the cached KV blocks that hold the start of `tokens` (whole blocks,
  // at least one token left to decode); returns how many tokens it now holds.
  int kv_attach_prefix(int seq, std::span<const int32_t> tokens);
  const KVCache& kv_cache() const { return *kv_; }
  int n_ctx() const { return n_ctx_; }
  int n_vocab() const;
  size_t kv_bytes_per_token() const;           // all layers, K + V, one sequence
  const MemoryPlan& plan() const { return plan_; }
  const ContextOptions& options() const { return opts_; }
  const Model& model() const { return model_; }
  // The backend the memory plan is about: the CUDA device's when any layer is offloaded.
  const Backend& backend() const { return device_backend_ ? *device_backend_ : *host_backend_; }

 private:
  struct Scratch;
  void run_ubatch(const Batch& batch, size_t begin, size_t end, float* logits_out);
  int shift_if_needed(int seq, int n_new);

  const Model& model_;
  ContextOptions opts_;
  int n_ctx_ = 0;
  MemoryPlan plan_;
  std::unique_ptr<Backend> host_backend_, device_backend_;  // the CPU's for layers it keeps
  std::unique_ptr<KVCache> kv_;
  std::unique_ptr<Scratch> scratch_;
  std::vector<float> logits_;
};

// Bytes of one K or V row of `n` elements stored as `type` (f32/f16/q8_0/q4_0).
size_t kv_row_bytes(DType type, int64_t n);

}  // namespace ember
