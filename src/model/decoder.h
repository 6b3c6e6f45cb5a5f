// The Llama-style pre-norm decoder that llama, qwen2 and qwen3 share: their files differ in
// metadata, RoPE style and which optional tensors exist (biases, q/k norms), not in the
// order of operations, which this file spells out once.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "model/arch.h"
#include "model/layers.h"
#include "model/moe.h"

namespace ember {

struct PreNormDecoder final : ArchModel {
  struct Layer {
    const float* attn_norm = nullptr;  // [n_embd]
    AttnWeights attn;
    const float* ffn_norm = nullptr;   // [n_embd]
    FfnWeights ffn;
    MoeWeights moe;                    // bound instead of ffn when the model has experts
  };
  MatView tok_embd;                    // [n_embd x n_vocab]
  std::vector<Layer> layers;
  const float* output_norm = nullptr;  // [n_embd]
  MatView output;                      // [n_embd x n_vocab], token_embd when tied

  void forward(Step& s) const override;
};

// Binds token_embd, per-layer attn_norm/attention/ffn_norm/ffn, output_norm and output
// (tied when absent). `qk_norm` requires attn_{q,k}_norm. A model with experts
// (hp.n_expert > 0) binds the MoE block (model/moe.h) in place of each dense FFN.
std::unique_ptr<ArchModel> bind_prenorm_decoder(TensorBinder& b, const Hparams& hp, bool qk_norm);
// The same with the family's own binding of each layer's attention and FFN weights (phi3's
// fused tensors) and its name for the norm before the FFN (gpt-oss: post_attention_norm).
using BindLayerAttention = std::function<AttnWeights(TensorBinder&, const Hparams&, int il)>;
using BindLayerFfn = std::function<FfnWeights(TensorBinder&, const Hparams&, int il)>;
std::unique_ptr<PreNormDecoder> bind_prenorm_decoder(TensorBinder& b, const Hparams& hp,
                                                     const BindLayerAttention& attention, const BindLayerFfn& ffn,
                                                     const char* ffn_norm = "ffn_norm.weight");

}  // namespace ember
