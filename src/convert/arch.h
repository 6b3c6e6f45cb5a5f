// What a GGUF of each supported architecture contains, as llama.cpp's converters write it:
// the hyperparameter keys (<arch>.block_count, ...) and the list of tensors with their names
// and shapes. `convert` checks its output against this list and `synth` generates it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ember::gguf {
class Writer;
}

namespace ember::convert {

enum class Arch { Llama, Qwen2, Qwen3, Gemma3 };

const char* arch_name(Arch arch);                 // "llama", "qwen2", ... (general.architecture)
Arch parse_arch(std::string_view name);           // throws Error(Unsupported) for others

struct HParams {
  Arch arch = Arch::Llama;
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
  int64_t sliding_window = 0;  // gemma3: local-attention window, tokens (0 = not written)
  bool tied_embeddings = true; // no output.weight: the logits reuse token_embd.weight

  int64_t head_size() const { return head_dim > 0 ? head_dim : n_embd / n_head; }
};

// Throws Error(InvalidArgument) naming the first inconsistent field (zero sizes, heads that
// do not divide, an odd head size ...).
void validate(const HParams& hp);

// Sets general.architecture and every <arch>.* hyperparameter key llama.cpp reads.
void write_hparams(gguf::Writer& writer, const HParams& hp);

// What a tensor is for; decides synthetic initialisation and helps quantization rules.
enum class TensorRole {
  TokenEmbedding,  // [n_embd, n_vocab]
  Output,          // [n_embd, n_vocab]
  Norm,            // 1-D RMSNorm weight (output_norm, attn_norm, ffn_norm, q/k norms, post-norms)
  Bias,            // 1-D bias (qwen2 q/k/v)
  AttnQ, AttnK, AttnV, AttnOutput,
  FfnGate, FfnUp, FfnDown,
};

struct TensorSpec {
  std::string name;            // e.g. "blk.3.attn_q.weight"
  std::vector<int64_t> shape;  // ne0 (input / contiguous) first
  TensorRole role;
  int layer;                   // -1 for tensors outside the blocks
  int64_t fan_in() const { return shape[0]; }
  int64_t n_elements() const;
};

// Every tensor llama.cpp expects for `hp`, in llama.cpp's usual file order.
std::vector<TensorSpec> tensor_specs(const HParams& hp);

}  // namespace ember::convert
