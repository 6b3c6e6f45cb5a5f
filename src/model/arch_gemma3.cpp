// gemma3: Gemma 3 text models (1B/4B/12B/27B language part).
//
// - Norm weights: Gemma's RMSNorm multiplies by (1 + w). llama.cpp's converter folds the 1
//   in when writing the GGUF (Gemma3Model inherits the "norm.weight" +1 shift of the Gemma
//   converters), so every *norm.weight in the file is already 1 + w and is applied as is.
// - Embeddings are scaled by sqrt(n_embd).
// - Sandwich norms: attn_norm before and post_attention_norm after attention, ffn_norm
//   before and post_ffw_norm after the FFN; per-head attn_q_norm / attn_k_norm before RoPE.
// - GELU(tanh)-gated FFN, neox RoPE.
// - Layers alternate: 5 sliding-window (local) layers, then 1 global layer (llama.cpp's
//   swa pattern 6: layer il is global when (il + 1) % 6 == 0; no window key: all global;
//   final_logit_softcapping is honoured when present, as llama.cpp does). Local layers use
//   rope base 10000 without scaling; global layers use rope.freq_base and rope scaling.
// - Query scale 1/sqrt(head_dim) (27B: 1/sqrt(n_embd / n_head), query_pre_attn_scalar).
// - Output head tied to token_embd unless output.weight exists.
// Forward: SandwichDecoder (sandwich_decoder.cpp).
//
// Keys:    gemma3.{context_length, embedding_length, block_count, feed_forward_length,
//          attention.head_count, attention.head_count_kv, attention.key_length,
//          attention.value_length, attention.layer_norm_rms_epsilon, attention.sliding_window,
//          rope.freq_base, rope.scaling.type/factor}; the window and soft-caps are Gemma's
//          own (Gemma3Params), read here rather than into the shared Hparams.
// Hugging Face: Gemma3ForCausalLM, Gemma3ForConditionalGeneration (its language model);
//          norm weights shifted by +1 (see above).
#include <cmath>

#include "gguf/gguf.h"
#include "model/arch.h"
#include "model/block_tensors.h"
#include "model/hparams.h"
#include "model/layers.h"
#include "model/sandwich_decoder.h"
#include "model/weights.h"
#include "util/error.h"

namespace ember {
namespace {

constexpr int kSwaPattern = 6;          // every 6th layer is global
constexpr float kLocalRopeBase = 10000.0f;

// Gemma 3's hyperparameters beyond the shared Hparams.
struct Gemma3Params {
  int n_swa = 0;               // tokens; sliding window of the local layers (0: every layer global)
  float attn_softcap = 0.0f;   // tanh soft-cap of attention scores (0 = none)
  float final_softcap = 0.0f;  // tanh soft-cap of output logits (0 = none)
};

Gemma3Params read_gemma3_params(const gguf::File& file, const Hparams& hp) {
  Gemma3Params p;
  // Without a sliding window (key absent or 0) every layer is global, as llama.cpp does.
  p.n_swa = static_cast<int>(arch_u32(file, hp, "attention.sliding_window").value_or(0));
  p.final_softcap = arch_f32(file, hp, "final_logit_softcapping").value_or(0.0f);
  p.attn_softcap = arch_f32(file, hp, "attn_logit_softcapping").value_or(0.0f);
  return p;
}

LayerAttention layer_attention(const Hparams& hp, const Gemma3Params& p, int il) {
  LayerAttention a = default_attention(hp);
  // Gemma 3 27B scales queries by 1/sqrt(n_embd / n_head) instead of 1/sqrt(head_dim).
  const bool is_27b = hp.n_layer == 62;
  a.scale = 1.0f / std::sqrt(static_cast<float>(is_27b ? hp.n_embd / hp.n_head : hp.head_dim));
  a.softcap = p.attn_softcap;
  if (p.n_swa > 0 && (il + 1) % kSwaPattern != 0) {  // local: own RoPE base, no scaling
    a.window = p.n_swa;
    a.rope_freq_base = kLocalRopeBase;
    a.rope_freq_scale = 1.0f;
  }
  return a;
}

void read_hparams(const gguf::File&, Hparams& hp) { hp.rope_neox = true; }

std::unique_ptr<ArchModel> bind(TensorBinder& b, const Hparams& hp) {
  const Gemma3Params p = read_gemma3_params(b.file(), hp);
  auto m = bind_sandwich_decoder(b, hp, true);
  m->final_softcap = p.final_softcap;
  for (int il = 0; il < hp.n_layer; ++il) m->attention.push_back(layer_attention(hp, p, il));
  return m;
}

using namespace block;
constexpr BlockTensor kBlock[] = {kAttnNorm,     kAttnQ,      kAttnK,   kAttnV, kAttnQNorm, kAttnKNorm,  kAttnOutput,
                                  kPostAttnNorm, kPreFfnNorm, kFfnGate, kFfnUp, kFfnDown,   kPostFfnNorm};
constexpr const char* kHfClasses[] = {"Gemma3ForCausalLM", "Gemma3ForConditionalGeneration"};

}  // namespace

extern const ArchInfo kArchGemma3{
    .name = "gemma3",
    .read_hparams = read_hparams,
    .bind = bind,
    .file = {.block = kBlock, .writes_head_size = true},
    .defaults = {.rope_base = 1000000.0f, .rms_eps = 1e-6f, .sliding_window = 512, .tied_embeddings = true},
    // Gemma's RMSNorm computes x * (1 + w) from HF's w; the GGUF holds 1 + w.
    .hf = {.classes = kHfClasses, .norm_shift = 1.0f},
};

}  // namespace ember
