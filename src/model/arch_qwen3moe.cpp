// qwen3moe: Qwen3-30B-A3B, Qwen3-235B-A22B, Qwen3-Coder-30B-A3B. qwen3's attention (per-head
// q/k norms, explicit head size, NEOX RoPE) with every FFN a mixture of experts: softmax
// over the router logits, top-k, the k weights renormalised to sum 1 (llama.cpp hard-codes
// this; the HF flag norm_topk_prob is not read), no shared expert.
//
// Keys:    qwen3moe.{the qwen3 keys, expert_count, expert_used_count,
//          expert_feed_forward_length (default feed_forward_length / expert_used_count)}
// Tensors: token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_q_norm, attn_k_norm,
//          attn_output, ffn_norm, ffn_gate_inp [n_embd, n_expert],
//          ffn_{gate,up}_exps [n_embd, n_ff_exp, n_expert], ffn_down_exps [n_ff_exp, n_embd, n_expert]},
//          output_norm, output (optional)
// Forward: PreNormDecoder (decoder.cpp) with the MoE block (moe.cpp).
// Hugging Face: Qwen3MoeForCausalLM; experts mlp.experts.E.{gate,up,down}_proj stacked, router
//          mlp.gate (norm_topk_prob must be true).
#include "model/block_tensors.h"
#include "model/decoder.h"
#include "model/moe.h"

namespace ember {
namespace {

constexpr MoeFamily kMoe{.gating = MoeGating::Softmax, .norm_weights = true};

void read_hparams(const gguf::File& file, Hparams& hp) {
  hp.rope_neox = true;
  read_moe_hparams(file, hp, kMoe);
}

std::unique_ptr<ArchModel> bind(TensorBinder& b, const Hparams& hp) { return bind_prenorm_decoder(b, hp, true); }

using namespace block;
constexpr BlockTensor kBlock[] = {kAttnNorm,   kAttnQ,      kAttnK,       kAttnV,     kAttnQNorm,
                                  kAttnKNorm,  kAttnOutput, kFfnNorm,     kFfnGateInp, kFfnGateExps,
                                  kFfnDownExps, kFfnUpExps};
constexpr const char* kHfClasses[] = {"Qwen3MoeForCausalLM"};

}  // namespace

extern const ArchInfo kArchQwen3Moe{
    .name = "qwen3moe",
    .read_hparams = read_hparams,
    .bind = bind,
    .file = {.block = kBlock, .writes_head_size = true},
    .defaults = {.rope_base = 1000000.0f, .rms_eps = 1e-6f},
    .hf = {.classes = kHfClasses},
    .quant = kMoeQuantRules,
    .default_experts = 8,
    .default_experts_used = 2,
    .moe = &kMoe,
};

}  // namespace ember
