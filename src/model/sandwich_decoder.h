// The Gemma-style decoder that gemma2 and gemma3 share: embeddings scaled by sqrt(n_embd),
// sandwich norms (a norm before and after both attention and the FFN), a GELU-gated FFN and
// an optionally soft-capped output. The families differ in their attention (q/k norms,
// window pattern, RoPE of the local layers, soft-caps), which they set in `attention`.
#pragma once
#include <memory>
#include <vector>

#include "model/arch.h"
#include "model/layers.h"

namespace ember {

struct SandwichDecoder final : ArchModel {
  struct Layer {
    const float* attn_norm;       // [n_embd]
    AttnWeights attn;             // q_norm/k_norm [head_dim] when the family has them
    const float* attn_post_norm;  // [n_embd]
    const float* ffn_norm;        // [n_embd]
    FfnWeights ffn;
    const float* ffn_post_norm;   // [n_embd]
  };
  MatView tok_embd;
  std::vector<Layer> layers;
  const float* output_norm = nullptr;
  MatView output;
  float final_softcap = 0.0f;  // tanh soft-cap of the output logits (0 = none)

  void forward(Step& s) const override;
};

// Binds token_embd, per-layer attn_norm, attention (with attn_{q,k}_norm when `qk_norm`),
// post_attention_norm, ffn_norm, ffn, post_ffw_norm, then output_norm and output (tied when
// absent). The caller fills attention and final_softcap.
std::unique_ptr<SandwichDecoder> bind_sandwich_decoder(TensorBinder& b, const Hparams& hp, bool qk_norm);

}  // namespace ember
