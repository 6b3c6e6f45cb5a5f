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
// Hugging Face: Qwen2MoeForCausalLM; experts stacked as qwen3moe's, the shared expert
//          mlp.shared_expert.{gate,up,down}_proj and its gate mlp.shared_expert_gate
//          (norm_topk_prob must be false).
#include "model/block_tensors.h"
#include "model/decoder.h"
#include "model/moe.h"

namespace ember {
namespace {

constexpr MoeFamily kMoe{.gating = MoeGating::Softmax, .norm_weights = false, .shared_expert = true};

void read_hparams(const gguf::File& file, Hparams& hp) {
  hp.rope_neox = true;
  read_moe_hparams(file, hp, kMoe);
}

std::unique_ptr<ArchModel> bind(TensorBinder& b, const Hparams& hp) { return bind_prenorm_decoder(b, hp, false); }

using namespace block;
constexpr BlockTensor kBlock[] = {kAttnNorm,       kAttnQ,        kAttnK,        kAttnV,      kAttnQBias,
                                  kAttnKBias,      kAttnVBias,    kAttnOutput,   kFfnNorm,    kFfnGateInp,
                                  kFfnGateExps,    kFfnDownExps,  kFfnUpExps,    kFfnGateInpShexp,
                                  kFfnGateShexp,   kFfnDownShexp, kFfnUpShexp};
constexpr const char* kHfClasses[] = {"Qwen2MoeForCausalLM"};

}  // namespace

extern const ArchInfo kArchQwen2Moe{
    .name = "qwen2moe",
    .read_hparams = read_hparams,
    .bind = bind,
    .file = {.block = kBlock},
    .defaults = {.rope_base = 1000000.0f, .rms_eps = 1e-6f},
    .hf = {.classes = kHfClasses},
    .quant = kMoeQuantRules,
    .default_experts = 8,
    .default_experts_used = 2,
    .moe = &kMoe,
};

}  // namespace ember
