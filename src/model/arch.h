// A model family's one record. Each family file (arch_llama.cpp, arch_qwen2.cpp, ...)
// defines an ArchInfo holding everything about the family: how to read its hyperparameters
// from GGUF metadata, which tensors it binds and its forward pass (inference); what a GGUF
// of the family holds (keys, per-block tensors and their shapes), how a Hugging Face
// checkpoint maps onto it (`convert`), the shape `synth` gives it and its quantization
// rules (`quantize`). convert/, synth/ and quantize/ read these records and restate no
// family; arch_registry.cpp lists them. A new dense family is one new file plus one line
// there.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/model.h"

namespace ember {

namespace gguf { class File; class Writer; }
class TensorBinder;
class Step;
struct ModelShape;
struct MoeFamily;

// How one layer attends, where families differ. The pre-norm families attend over the whole
// context with the file's RoPE (default_attention); gemma3's local layers set their own.
struct LayerAttention {
  int window = 0;                 // tokens; sliding window (0 = the whole context)
  float rope_freq_base = 10000.0f;  // RoPE theta of this layer
  float rope_freq_scale = 1.0f;   // linear scaling: 1/rope.scaling.factor
  float scale = 0.0f;             // multiplies q.k before the softmax
  float softcap = 0.0f;           // tanh soft-cap of the attention scores (0 = none)
  const float* sinks = nullptr;   // [n_head] attention-sink logits (gpt-oss), prepared vector; null = none
  // [n_rot/2] divisors of the pairs' RoPE frequencies in the layer's device memory (Llama 3
  // rope_freqs.weight, LongRoPE's rope_factors_short.weight); nullptr: none.
  const float* rope_factors = nullptr;
  // LongRoPE (rope_factors_long.weight): replaces rope_factors in a context longer than
  // hp.n_ctx_orig tokens (for_context).
  const float* rope_factors_long = nullptr;

  // This layer in a context of n_ctx tokens per sequence (LongRoPE picks its factors).
  LayerAttention for_context(const Hparams& hp, int n_ctx) const;
};
LayerAttention default_attention(const Hparams& hp);  // whole context, 1/sqrt(head_dim)

// An architecture's bound weights and its forward pass over one ubatch.
struct ArchModel {
  virtual ~ArchModel() = default;
  // Runs the ubatch held by `step` through the model: embeddings in, logits written for the
  // rows the step asks for. Reads and writes the KV cache through the step, and calls
  // step.begin_layer(il) as each layer begins (a split model changes device there).
  virtual void forward(Step& step) const = 0;
  std::vector<LayerAttention> attention;  // [n_layer], filled by the family's bind
};

// What a tensor is for: decides synth's initialisation and convert's Q/K row order and
// norm shift.
enum class TensorRole {
  TokenEmbedding,  // [n_embd, n_vocab]
  Output,          // [n_embd, n_vocab]
  Norm,            // 1-D RMSNorm weight (output_norm, attn_norm, ffn_norm, q/k norms, post-norms)
  Bias,            // 1-D bias (qwen2 q/k/v)
  AttnQ, AttnK, AttnV, AttnOutput,
  FfnGate, FfnUp, FfnDown,       // also the expert and shared-expert projections
  RopeFactors,     // [n_rot/2] RoPE frequency divisors (rope_freqs, LongRoPE): computed, not random
  Router,          // [n_embd, n_expert] expert router, or the [n_embd] shared-expert gate
};

// Symbolic sizes a family's block table is written in (resolved by tensor_specs).
enum class Dim {
  None,    // (the second size of a vector)
  Embd,    // n_embd
  QRows,   // n_head * head size
  KvRows,  // n_head_kv * head size
  Head,    // head size
  Ff,      // n_ff
  QkvRows, // QRows + 2 KvRows: fused attn_qkv (phi3)
  Ff2,     // 2 n_ff: fused gate and up (phi3's ffn_up)
  Expert,  // n_expert (the third size of an expert tensor)
  FfExp,   // n_ff_exp, an expert's FFN width
  FfShexp, // n_ff_shexp, the shared expert's FFN width
  Heads,   // n_head (gpt-oss's attention sinks, one per query head)
};

// One tensor of every block: "blk.N.<name>" in the GGUF, "<prefix>layers.N.<hf_name>" in a
// Hugging Face checkpoint. A 3-D expert tensor stacks one HF tensor per expert: its hf_name
// holds "{}" where the expert's number goes.
struct BlockTensor {
  const char* name;     // e.g. "attn_q.weight"
  Dim ne0, ne1;         // ne0 (input / contiguous) first; ne1 = Dim::None for vectors
  TensorRole role;
  const char* hf_name;  // e.g. "self_attn.q_proj.weight", "mlp.experts.{}.up_proj.weight"
  Dim ne2 = Dim::None;  // Dim::Expert for 3-D expert tensors
};

// Which block tensors the file-type mixes (quantize/mix.h rules 4 and 5) treat as
// llama.cpp's attn_v and ffn_down, the ones a _M mix gives more bits.
struct QuantRules {
  std::span<const char* const> value_tensors;  // attention value projections
  std::span<const char* const> down_tensors;   // FFN down projections
};
// The llama lineage's (every family's so far); the MoE families add their expert and
// shared-expert down projections, as llama.cpp's "ffn_down" substring match does.
inline constexpr const char* kDenseValueTensors[] = {"attn_v.weight"};
inline constexpr const char* kDenseDownTensors[] = {"ffn_down.weight"};
inline constexpr QuantRules kDenseQuantRules{kDenseValueTensors, kDenseDownTensors};
inline constexpr const char* kMoeDownTensors[] = {"ffn_down.weight", "ffn_down_exps.weight", "ffn_down_shexp.weight"};
inline constexpr QuantRules kMoeQuantRules{kDenseValueTensors, kMoeDownTensors};

struct ArchInfo {
  const char* name;  // general.architecture value

  // Inference. read_hparams fills the family's fields of hp (the common keys are already
  // read); bind binds every tensor (checking type and shape) and returns the ready model.
  void (*read_hparams)(const gguf::File& file, Hparams& hp);
  std::unique_ptr<ArchModel> (*bind)(TensorBinder& binder, const Hparams& hp);

  // The file, as llama.cpp's converter for the family writes it.
  struct FileLayout {
    std::span<const BlockTensor> block;  // every block's tensors, in file order
    // attention.key_length/value_length are always written (otherwise only when the head
    // size is not n_embd / n_head, as llama.cpp derives it).
    bool writes_head_size = false;
    bool writes_rope_dims_and_vocab = false;  // rope.dimension_count and vocab_size keys
  } file;

  // The family's usual values: synth's shape, convert's fallback for config.json keys.
  struct Defaults {
    float rope_base;               // RoPE theta
    float rms_eps;                 // RMSNorm epsilon (synth only: HF configs default to 1e-6)
    int64_t sliding_window = 0;    // tokens of the local layers' window; 0: the family has none
    bool tied_embeddings = false;  // the output head reuses token_embd
  } defaults;

  // Hugging Face checkpoints (config.json, *.safetensors).
  struct HfMapping {
    std::span<const char* const> classes;  // config.json "architectures" names
    // HF rotates half-split pairs; the family's GGUF adjacent pairs, so the rows of Q and K
    // are permuted (llama).
    bool permute_qk = false;
    float norm_shift = 0.0f;  // added to every norm weight (gemma: HF w, GGUF 1 + w)
  } hf;

  QuantRules quant = kDenseQuantRules;  // quantize/mix.h rules 4 and 5

  // Keys of the family's own that `synth` and `convert` write beside write_hparams' (gemma2's
  // soft-caps), or nullptr.
  void (*write_family_keys)(gguf::Writer& writer, const ModelShape& shape) = nullptr;
  // Another name `synth --arch` and error messages know the record by, when the GGUF
  // architecture is shared (mixtral: a llama file with experts, loaded by the llama record).
  const char* alias = nullptr;
  // The experts synth gives the family (0: dense).
  int64_t default_experts = 0, default_experts_used = 0;
  // How the family's MoE layers route (model/moe.h), for `convert` to check a checkpoint's
  // config against; nullptr: dense.
  const MoeFamily* moe = nullptr;
};

// The architecture named `name`, or nullptr.
const ArchInfo* find_arch(std::string_view name);
// The architecture named `name`; throws Error(Unsupported) listing the known ones.
const ArchInfo& require_arch(std::string_view name);
// The architecture whose Hugging Face class (config.json "architectures") is `hf_class`, or nullptr.
const ArchInfo* find_arch_by_hf_class(std::string_view hf_class);
// Comma-separated list of known names (for error messages).
std::string known_archs();

// RoPE scaling a written file declares (ModelShape::rope_scaling), as llama.cpp's converters
// write it: Llama3 as rope_freqs.weight only (Llama 3.1's smooth per-pair divisors), Yarn as
// rope.scaling.{type, factor, original_context_length}, LongRope as phi3's
// rope_factors_{long,short}.weight with rope.scaling.attn_factor.
enum class RopeScaling { None, Llama3, Yarn, LongRope };

// The sizes `convert` and `synth` write into a GGUF's <arch>.* keys and tensor shapes
// (loading reads them back into Hparams).
struct ModelShape {
  const ArchInfo* arch = nullptr;
  int64_t n_vocab = 0;     // tokens
  int64_t n_embd = 0;      // model width (residual stream), elements
  int64_t n_ff = 0;        // feed-forward hidden width, elements
  int64_t n_layer = 0;     // transformer blocks
  int64_t n_head = 0;      // query heads
  int64_t n_head_kv = 0;   // key/value heads (GQA: divides n_head)
  int64_t head_dim = 0;    // elements per head; 0 = n_embd / n_head
  int64_t n_ctx = 0;       // training context length, tokens
  float rms_eps = 1e-5f;   // RMSNorm epsilon
  float rope_base = 10000.0f;  // RoPE theta
  int64_t sliding_window = 0;  // tokens, families with local layers (0 = not written)
  int64_t n_expert = 0;        // experts per MoE layer (0: dense FFNs)
  int64_t n_expert_used = 0;   // experts each token runs
  int64_t n_ff_exp = 0;        // an expert's FFN width (written when > 0)
  int64_t n_ff_shexp = 0;      // the shared expert's FFN width (written when > 0)
  bool tied_embeddings = true; // no output.weight: the logits reuse token_embd.weight
  RopeScaling rope_scaling = RopeScaling::None;
  float rope_factor = 8.0f;    // context extension of the scaling (n_ctx / rope_orig_ctx)
  int64_t rope_orig_ctx = 0;   // tokens before the extension; 0 = n_ctx / rope_factor

  int64_t head_size() const { return head_dim > 0 ? head_dim : n_embd / n_head; }
  int64_t orig_ctx() const { return rope_orig_ctx > 0 ? rope_orig_ctx : static_cast<int64_t>(n_ctx / rope_factor); }
};

// Throws Error(InvalidArgument) naming the first inconsistent field (zero sizes, heads that
// do not divide, an odd head size ...).
void validate(const ModelShape& shape);

// Sets general.architecture and every <arch>.* hyperparameter key llama.cpp reads.
void write_hparams(gguf::Writer& writer, const ModelShape& shape);

struct TensorSpec {
  std::string name;            // e.g. "blk.3.attn_q.weight"
  std::vector<int64_t> shape;  // ne0 (input / contiguous) first
  TensorRole role;
  int layer;                   // -1 for tensors outside the blocks
  const BlockTensor* block = nullptr;  // the family's table entry; nullptr outside the blocks
  int64_t fan_in() const { return shape[0]; }
  int64_t n_elements() const;
};

// Every tensor llama.cpp expects for `shape`, in llama.cpp's usual file order.
std::vector<TensorSpec> tensor_specs(const ModelShape& shape);

// The values of a TensorRole::RopeFactors tensor of `shape`: Llama 3.1's divisors (as
// convert_hf_to_gguf computes them: low/high frequency factors 1 and 4), or for LongRoPE
// smooth synthetic ones (short near 1, long rising to rope_factor).
std::vector<float> rope_factor_values(const TensorSpec& spec, const ModelShape& shape);

}  // namespace ember
