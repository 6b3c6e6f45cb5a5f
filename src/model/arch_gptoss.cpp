// gpt-oss: OpenAI's gpt-oss-20b and gpt-oss-120b (llama.cpp's LLM_ARCH_OPENAI_MOE).
//
// - Pre-norm blocks with NEOX RoPE (YaRN in the released models: the common rope.scaling
//   keys) and q/k/v/output biases; the norm before the FFN is named post_attention_norm.
// - Attention scale 1/sqrt(n_rot); every head has a learned sink logit (attn_sinks.weight,
//   [n_head]) that joins its softmax denominator (AttentionParams::sinks).
// - Layers alternate: with the default pattern 2 the even layers attend over a sliding window
//   (attention.sliding_window, 128 in the released models) and the odd ones over the whole
//   context, as llama.cpp's set_swa_pattern(2); attention.sliding_window_pattern overrides
//   the period. The windowed layers take rope.freq_base_swa when the file has it.
// - Every FFN is a mixture of experts (moe.cpp): router with a bias, top-k on the biased raw
//   logits, a softmax over the k chosen (MoeGating::SoftmaxSelected, no renormalisation),
//   experts with biases (ggml's add_id) and the clamped SwiGLU (Activation::SwiGLUOai).
// - The output head is its own (output.weight), not tied.
//
// Keys:    gpt-oss.{context_length, embedding_length, block_count, feed_forward_length,
//          attention.head_count, attention.head_count_kv, attention.key_length,
//          attention.value_length, attention.layer_norm_rms_epsilon, attention.sliding_window,
//          attention.sliding_window_pattern (optional), rope.freq_base, rope.freq_base_swa
//          (optional), rope.scaling.*, expert_count, expert_used_count,
//          expert_feed_forward_length}
// Tensors: token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v (+ .bias), attn_output
//          (+ .bias), attn_sinks [n_head], post_attention_norm, ffn_gate_inp (+ .bias
//          [n_expert]), ffn_{gate,up}_exps [n_embd, n_ff_exp, n_expert] (+ .bias [n_ff_exp,
//          n_expert]), ffn_down_exps [n_ff_exp, n_embd, n_expert] (+ .bias [n_embd, n_expert])},
//          output_norm, output
// Forward: PreNormDecoder (decoder.cpp) with the MoE block (moe.cpp).
#include <cmath>

#include "gguf/gguf.h"
#include "model/block_tensors.h"
#include "model/decoder.h"
#include "model/hparams.h"
#include "model/moe.h"
#include "model/weights.h"
#include "util/error.h"

namespace ember {
namespace {

constexpr int kDefaultWindow = 128;  // tokens (the released models')
constexpr int kDefaultSwaPattern = 2;

void read_hparams(const gguf::File& file, Hparams& hp) {
  hp.rope_neox = true;
  read_moe_hparams(file, hp,
                   {.gating = MoeGating::SoftmaxSelected, .norm_weights = false, .act = Activation::SwiGLUOai});
}

// Layer il's attention: the window on the layers the pattern marks (il % period < period - 1),
// each layer's sink logits, scale 1/sqrt(n_rot).
LayerAttention layer_attention(TensorBinder& b, const Hparams& hp, int il, int window, int period, float swa_base) {
  LayerAttention a = default_attention(hp);
  a.scale = 1.0f / std::sqrt(static_cast<float>(hp.n_rot));
  if (period == 0 || il % period < period - 1) {
    a.window = window;
    a.rope_freq_base = swa_base;
  }
  a.sinks = b.vector(blk(il, "attn_sinks.weight"), hp.n_head);
  return a;
}

std::unique_ptr<ArchModel> bind(TensorBinder& b, const Hparams& hp) {
  const gguf::File& f = b.file();
  const int window = static_cast<int>(arch_u32(f, hp, "attention.sliding_window").value_or(kDefaultWindow));
  if (window <= 0) fail(ErrorKind::Format, "{}: gpt-oss.attention.sliding_window must be positive", f.source());
  const gguf::KeyValue* pattern_kv = f.find(hp.arch + ".attention.sliding_window_pattern");
  if (pattern_kv && pattern_kv->type == gguf::ValueType::ARRAY)
    fail(ErrorKind::Unsupported, "{}: a per-layer gpt-oss.attention.sliding_window_pattern array is not supported",
         f.source());
  const int period = static_cast<int>(arch_u32(f, hp, "attention.sliding_window_pattern").value_or(kDefaultSwaPattern));
  const float swa_base = arch_f32(f, hp, "rope.freq_base_swa").value_or(hp.rope_freq_base);
  auto m = bind_prenorm_decoder(
      b, hp, [](TensorBinder& tb, const Hparams& h, int il) { return bind_attention(tb, h, il, false); }, bind_ffn,
      "post_attention_norm.weight");
  m->attention.clear();
  for (int il = 0; il < hp.n_layer; ++il) m->attention.push_back(layer_attention(b, hp, il, window, period, swa_base));
  return m;
}

using namespace block;
inline constexpr BlockTensor kAttnOutputBias{"attn_output.bias", Embd, None, Bias, nullptr};
inline constexpr BlockTensor kAttnSinks{"attn_sinks.weight", Heads, None, Bias, nullptr};
inline constexpr BlockTensor kPostAttnNormPreFfn{"post_attention_norm.weight", Embd, None, Norm, nullptr};
inline constexpr BlockTensor kFfnGateInpBias{"ffn_gate_inp.bias", Expert, None, Bias, nullptr};
inline constexpr BlockTensor kFfnGateExpsBias{"ffn_gate_exps.bias", FfExp, Expert, Bias, nullptr};
inline constexpr BlockTensor kFfnDownExpsBias{"ffn_down_exps.bias", Embd, Expert, Bias, nullptr};
inline constexpr BlockTensor kFfnUpExpsBias{"ffn_up_exps.bias", FfExp, Expert, Bias, nullptr};
constexpr BlockTensor kBlock[] = {kAttnNorm,         kAttnQ,          kAttnQBias,       kAttnK,
                                  kAttnKBias,        kAttnV,          kAttnVBias,       kAttnOutput,
                                  kAttnOutputBias,   kAttnSinks,      kPostAttnNormPreFfn, kFfnGateInp,
                                  kFfnGateInpBias,   kFfnGateExps,    kFfnGateExpsBias, kFfnDownExps,
                                  kFfnDownExpsBias,  kFfnUpExps,      kFfnUpExpsBias};

}  // namespace

extern const ArchInfo kArchGptOss{
    .name = "gpt-oss",
    .read_hparams = read_hparams,
    .bind = bind,
    .file = {.block = kBlock, .writes_head_size = true},
    .defaults = {.rope_base = 150000.0f, .rms_eps = 1e-5f, .sliding_window = kDefaultWindow},
    .quant = kMoeQuantRules,
    .default_experts = 32,
    .default_experts_used = 4,
};

}  // namespace ember
