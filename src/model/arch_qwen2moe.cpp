// qwen2moe: Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B. qwen2's attention (Q/K/V biases, NEOX RoPE)
// with every FFN a mixture of experts: softmax over the router logits, top-k, the weights
// not renormalised, plus a shared expert scaled by sigmoid(x . ffn_gate_inp_shexp).
//
// Keys:    qwen2moe.{the qwen2 keys, expert_count, expert_used_count,
//          expert_feed_forward_length (default feed_forward_length / expert_used_count),
//          expert_shared_feed_forward_length (default feed_forward_length)}
// Tensors: token_embd, blk.N.{attn_norm, attn_q/k/v (.weight and .bias), attn_output,
//          ffn_norm, ffn_gate_inp, ffn_{gate,down,up}_exps, ffn_gate_inp_shexp [n_embd],
//          ffn_{gate,down,up}_shexp}, output_norm, output
// Forward: PreNormDecoder (decoder.cpp) with the MoE block (moe.cpp).
#include "model/block_tensors.h"
#include "model/decoder.h"
#include "model/moe.h"

namespace ember {
namespace {

void read_hparams(const gguf::File& file, Hparams& hp) {
  hp.rope_neox = true;
  read_moe_hparams(file, hp, {.gating = MoeGating::Softmax, .norm_weights = false, .shared_expert = true});
}

std::unique_ptr<ArchModel> bind(TensorBinder& b, const Hparams& hp) { return bind_prenorm_decoder(b, hp, false); }

using namespace block;
constexpr BlockTensor kBlock[] = {kAttnNorm,       kAttnQ,        kAttnK,        kAttnV,      kAttnQBias,
                                  kAttnKBias,      kAttnVBias,    kAttnOutput,   kFfnNorm,    kFfnGateInp,
                                  kFfnGateExps,    kFfnDownExps,  kFfnUpExps,    kFfnGateInpShexp,
                                  kFfnGateShexp,   kFfnDownShexp, kFfnUpShexp};

}  // namespace

extern const ArchInfo kArchQwen2Moe{
    .name = "qwen2moe",
    .read_hparams = read_hparams,
    .bind = bind,
    .file = {.block = kBlock},
    .defaults = {.rope_base = 1000000.0f, .rms_eps = 1e-6f},
    .quant = kMoeQuantRules,
    .default_experts = 8,
    .default_experts_used = 2,
};

}  // namespace ember
