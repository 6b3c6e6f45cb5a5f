// gemma2: Gemma 2 (2B, 9B, 27B).
//
// - Norm weights are 1 + w in the GGUF (the converter folds Gemma's +1 in), applied as is.
// - Embeddings scaled by sqrt(n_embd); sandwich norms around attention and the FFN (no q/k
//   norms); GELU(tanh)-gated FFN; neox RoPE, the same base and scaling on every layer.
// - Layers alternate: even layers attend over a sliding window (attention.sliding_window,
//   4096 when absent), odd layers over the whole context (llama.cpp's swa pattern 2).
// - Soft-caps: attention scores cap * tanh(s / cap) with attn_logit_softcapping (50 when
//   absent) and output logits with final_logit_softcapping (30 when absent), as llama.cpp.
// - Query scale: HF's query_pre_attn_scalar, which GGUF does not store; llama.cpp infers it
//   from the size: 1/sqrt(n_embd / n_head) for the 27B (46 layers), else 1/sqrt(head_dim).
// - The output head is always token_embd (llama.cpp ignores any output.weight).
//
// Keys:    gemma2.{context_length, embedding_length, block_count, feed_forward_length,
//          attention.head_count, attention.head_count_kv, attention.key_length,
//          attention.value_length, attention.layer_norm_rms_epsilon, attention.sliding_window,
//          attn_logit_softcapping, final_logit_softcapping, rope.freq_base}
// Forward: SandwichDecoder (sandwich_decoder.cpp).
// Hugging Face: Gemma2ForCausalLM; norm weights shifted by +1.
#include <cmath>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "model/arch.h"
#include "model/block_tensors.h"
#include "model/hparams.h"
#include "model/layers.h"
#include "model/sandwich_decoder.h"
#include "model/weights.h"

namespace ember {
namespace {

constexpr int kSwaPattern = 2;           // every 2nd layer is global
constexpr int kDefaultWindow = 4096;     // tokens
constexpr float kDefaultAttnSoftcap = 50.0f;
constexpr float kDefaultFinalSoftcap = 30.0f;
constexpr int kLayersOf27B = 46;

LayerAttention layer_attention(const Hparams& hp, int window, float softcap, int il) {
  LayerAttention a = default_attention(hp);
  const int scale_dim = hp.n_layer == kLayersOf27B ? hp.n_embd / hp.n_head : hp.head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(scale_dim));
  a.softcap = softcap;
  if ((il + 1) % kSwaPattern != 0) a.window = window;
  return a;
}

void read_hparams(const gguf::File&, Hparams& hp) { hp.rope_neox = true; }

std::unique_ptr<ArchModel> bind(TensorBinder& b, const Hparams& hp) {
  const gguf::File& f = b.file();
  const int window = static_cast<int>(arch_u32(f, hp, "attention.sliding_window").value_or(kDefaultWindow));
  const float attn_softcap = arch_f32(f, hp, "attn_logit_softcapping").value_or(kDefaultAttnSoftcap);
  auto m = bind_sandwich_decoder(b, hp, false);
  m->final_softcap = arch_f32(f, hp, "final_logit_softcapping").value_or(kDefaultFinalSoftcap);
  m->output = b.matmul_matrix("token_embd.weight", hp.n_embd, hp.n_vocab);  // always tied
  for (int il = 0; il < hp.n_layer; ++il) m->attention.push_back(layer_attention(hp, window, attn_softcap, il));
  return m;
}

void write_family_keys(gguf::Writer& w, const ModelShape&) {
  w.set_f32("gemma2.attn_logit_softcapping", kDefaultAttnSoftcap);
  w.set_f32("gemma2.final_logit_softcapping", kDefaultFinalSoftcap);
}

using namespace block;
constexpr BlockTensor kBlock[] = {kAttnNorm,     kAttnQ,      kAttnK,   kAttnV, kAttnOutput,
                                  kPostAttnNorm, kPreFfnNorm, kFfnGate, kFfnUp, kFfnDown, kPostFfnNorm};
constexpr const char* kHfClasses[] = {"Gemma2ForCausalLM"};

}  // namespace

extern const ArchInfo kArchGemma2{
    .name = "gemma2",
    .read_hparams = read_hparams,
    .bind = bind,
    .file = {.block = kBlock, .writes_head_size = true},
    .defaults = {.rope_base = 10000.0f, .rms_eps = 1e-6f, .sliding_window = kDefaultWindow, .tied_embeddings = true},
    .hf = {.classes = kHfClasses, .norm_shift = 1.0f},
    .write_family_keys = write_family_keys,
};

}  // namespace ember
