// qwen3: Qwen 3 dense models. Like qwen2 without the Q/K/V biases, plus an RMS norm over
// each query and key head (attn_q_norm / attn_k_norm, [head_dim]) before RoPE; head_dim is
// set explicitly (attention.key_length, 128) rather than n_embd / n_head.
//
// Keys:    qwen3.{context_length, embedding_length, block_count, feed_forward_length,
//          attention.head_count, attention.head_count_kv, attention.key_length,
//          attention.value_length, attention.layer_norm_rms_epsilon, rope.freq_base}
// Tensors: token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_q_norm, attn_k_norm,
//          attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}, output_norm, output (optional)
// Forward: PreNormDecoder (decoder.cpp) with per-head q/k norms.
// Hugging Face: Qwen3ForCausalLM, tensors as they are.
#include "gguf/gguf.h"
#include "model/block_tensors.h"
#include "model/decoder.h"

namespace ember {
namespace {

void read_hparams(const gguf::File&, Hparams& hp) { hp.rope_neox = true; }

std::unique_ptr<ArchModel> bind(TensorBinder& b, const Hparams& hp) { return bind_prenorm_decoder(b, hp, true); }

using namespace block;
constexpr BlockTensor kBlock[] = {kAttnNorm,  kAttnQ,      kAttnK,   kAttnV,   kAttnQNorm,
                                  kAttnKNorm, kAttnOutput, kFfnNorm, kFfnGate, kFfnUp, kFfnDown};
constexpr const char* kHfClasses[] = {"Qwen3ForCausalLM"};

}  // namespace

extern const ArchInfo kArchQwen3{
    .name = "qwen3",
    .read_hparams = read_hparams,
    .bind = bind,
    // Qwen 3 heads are not n_embd / n_head in general; its converter always says so.
    .file = {.block = kBlock, .writes_head_size = true},
    .defaults = {.rope_base = 1000000.0f, .rms_eps = 1e-6f},
    .hf = {.classes = kHfClasses},
};

}  // namespace ember
