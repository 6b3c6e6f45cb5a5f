// llama: Llama 1/2/3, Mistral, TinyLlama, SmolLM (and llama2.c checkpoints converted by
// `ember convert llama2c`). GQA, adjacent-pair RoPE ("normal" rope: pairs x[2i], x[2i+1]),
// RoPE scaling (linear, YaRN, Llama 3 frequency factors), SwiGLU FFN, output head optional
// (tied to token_embd); a file with experts (Mixtral) has the MoE block in place of each FFN
// (arch_mixtral.cpp).
//
// Keys:    llama.{context_length, embedding_length, block_count, feed_forward_length,
//          attention.head_count, attention.head_count_kv, attention.layer_norm_rms_epsilon,
//          rope.dimension_count, rope.freq_base, rope.scaling.{type, factor,
//          original_context_length, yarn_*}}
// Tensors: token_embd, rope_freqs (optional, Llama 3.1+: [n_rot/2] frequency divisors),
//          blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output (optional biases), ffn_norm,
//          ffn_gate, ffn_up, ffn_down}, output_norm, output (optional)
// Forward: PreNormDecoder (decoder.cpp).
// Hugging Face: LlamaForCausalLM, MistralForCausalLM; Q/K rows permuted (HF half-split
//          RoPE pairs to the adjacent pairs above).
#include "gguf/gguf.h"
#include "model/block_tensors.h"
#include "model/decoder.h"
#include "model/layers.h"
#include "model/moe.h"
#include "util/error.h"

namespace ember {
namespace {

void read_hparams(const gguf::File& file, Hparams& hp) {
  hp.rope_neox = false;
  // Mixtral: llama with experts (arch_mixtral.cpp); none in a dense file.
  read_moe_hparams(file, hp, {.gating = MoeGating::Softmax, .norm_weights = true, .width = ExpertWidth::Ff, .required = false});
}

std::unique_ptr<ArchModel> bind(TensorBinder& b, const Hparams& hp) {
  auto m = bind_prenorm_decoder(b, hp, false);
  bind_rope_factors(b, hp, m->attention);  // Llama 3.1+: rope_freqs.weight
  return m;
}

using namespace block;
constexpr BlockTensor kBlock[] = {kAttnNorm, kAttnQ, kAttnK, kAttnV, kAttnOutput, kFfnNorm, kFfnGate, kFfnUp, kFfnDown};
constexpr const char* kHfClasses[] = {"LlamaForCausalLM", "MistralForCausalLM"};

}  // namespace

extern const ArchInfo kArchLlama{
    .name = "llama",
    .read_hparams = read_hparams,
    .bind = bind,
    .file = {.block = kBlock, .writes_rope_dims_and_vocab = true},
    .defaults = {.rope_base = 10000.0f, .rms_eps = 1e-5f},
    .hf = {.classes = kHfClasses, .permute_qk = true},
    .quant = kMoeQuantRules,  // Mixtral files are llama files
};

}  // namespace ember
