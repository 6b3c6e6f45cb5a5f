// olmoe: OLMoE-1B-7B. Llama-like pre-norm blocks with NEOX RoPE, an RMS norm over the whole
// q and k rows (not per head) before RoPE, and every FFN a mixture of experts as wide as
// feed_forward_length: softmax over the router logits, top-k, weights not renormalised.
//
// Keys:    olmoe.{context_length, embedding_length, block_count, feed_forward_length,
//          attention.head_count, attention.head_count_kv, attention.layer_norm_rms_epsilon,
//          rope.freq_base, expert_count, expert_used_count}
// Tensors: token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_q_norm [n_embd],
//          attn_k_norm [n_embd], attn_output, ffn_norm, ffn_gate_inp,
//          ffn_{gate,down,up}_exps [.., n_ff, n_expert]}, output_norm, output
// Forward: PreNormDecoder (decoder.cpp) with full-row q/k norms and the MoE block (moe.cpp).
// Hugging Face: OlmoeForCausalLM; Q/K rows as they are (HF's half-split RoPE is NEOX), experts
//          stacked as qwen3moe's (norm_topk_prob must be false; clip_qkv does not convert).
#include "gguf/gguf.h"
#include "model/block_tensors.h"
#include "model/decoder.h"
#include "model/moe.h"
#include "model/weights.h"
#include "util/error.h"

namespace ember {
namespace {

constexpr MoeFamily kMoe{.gating = MoeGating::Softmax, .norm_weights = false, .width = ExpertWidth::Ff};

void read_hparams(const gguf::File& file, Hparams& hp) {
  hp.rope_neox = true;
  // llama.cpp shapes attn_k_norm [n_embd]: the keys must be as wide as the model.
  if (hp.n_embd_k_gqa() != hp.n_embd)
    fail(ErrorKind::Unsupported, "{}: olmoe with {} key heads of {} (not {} wide) is not supported", file.source(),
         hp.n_head_kv, hp.head_dim, hp.n_embd);
  read_moe_hparams(file, hp, kMoe);
}

std::unique_ptr<ArchModel> bind(TensorBinder& b, const Hparams& hp) {
  std::unique_ptr<ArchModel> m = bind_prenorm_decoder(b, hp, false);
  for (int il = 0; il < hp.n_layer; ++il) {
    AttnWeights& a = static_cast<PreNormDecoder&>(*m).layers[il].attn;
    a.q_norm = b.vector(blk(il, "attn_q_norm.weight"), static_cast<int64_t>(hp.n_head) * hp.head_dim);
    a.k_norm = b.vector(blk(il, "attn_k_norm.weight"), hp.n_embd_k_gqa());
    a.qk_norm_full_row = true;
  }
  return m;
}

using namespace block;
inline constexpr BlockTensor kAttnQNormRow{"attn_q_norm.weight", QRows, None, Norm, "self_attn.q_norm.weight"};
inline constexpr BlockTensor kAttnKNormRow{"attn_k_norm.weight", KvRows, None, Norm, "self_attn.k_norm.weight"};
constexpr BlockTensor kBlock[] = {kAttnNorm,     kAttnQ,      kAttnK,         kAttnV,         kAttnQNormRow,
                                  kAttnKNormRow, kAttnOutput, kFfnNorm,       kFfnGateInp,    kFfnGateExpsFf,
                                  kFfnDownExpsFf, kFfnUpExpsFf};
constexpr const char* kHfClasses[] = {"OlmoeForCausalLM"};

}  // namespace

extern const ArchInfo kArchOlmoe{
    .name = "olmoe",
    .read_hparams = read_hparams,
    .bind = bind,
    .file = {.block = kBlock},
    .defaults = {.rope_base = 10000.0f, .rms_eps = 1e-5f},
    .hf = {.classes = kHfClasses},
    .quant = kMoeQuantRules,
    .default_experts = 8,
    .default_experts_used = 2,
    .moe = &kMoe,
};

}  // namespace ember
