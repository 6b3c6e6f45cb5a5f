// qwen2: Qwen 1.5 / Qwen 2 / Qwen 2.5. Like llama, but the Q/K/V projections carry biases
// and RoPE is "neox" (rotates the pairs x[i], x[i + n_rot/2]); small models tie the output
// head to token_embd.
//
// Keys:    qwen2.{context_length, embedding_length, block_count, feed_forward_length,
//          attention.head_count, attention.head_count_kv, attention.layer_norm_rms_epsilon,
//          rope.freq_base}
// Tensors: token_embd, blk.N.{attn_norm, attn_q/k/v (.weight and .bias), attn_output,
//          ffn_norm, ffn_gate, ffn_up, ffn_down}, output_norm, output (optional)
// Forward: PreNormDecoder (decoder.cpp), biases added after the projections.
// Hugging Face: Qwen2ForCausalLM, tensors as they are.
#include "gguf/gguf.h"
#include "model/block_tensors.h"
#include "model/decoder.h"

namespace ember {
namespace {

void read_hparams(const gguf::File&, Hparams& hp) { hp.rope_neox = true; }

std::unique_ptr<ArchModel> bind(TensorBinder& b, const Hparams& hp) { return bind_prenorm_decoder(b, hp, false); }

using namespace block;
constexpr BlockTensor kBlock[] = {kAttnNorm,  kAttnQ,      kAttnK,   kAttnV,   kAttnQBias, kAttnKBias,
                                  kAttnVBias, kAttnOutput, kFfnNorm, kFfnGate, kFfnUp,     kFfnDown};
constexpr const char* kHfClasses[] = {"Qwen2ForCausalLM"};

}  // namespace

extern const ArchInfo kArchQwen2{
    .name = "qwen2",
    .read_hparams = read_hparams,
    .bind = bind,
    .file = {.block = kBlock},
    .defaults = {.rope_base = 1000000.0f, .rms_eps = 1e-6f},
    .hf = {.classes = kHfClasses},
};

}  // namespace ember
