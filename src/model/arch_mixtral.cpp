// mixtral: Mixtral 8x7B / 8x22B, which llama.cpp stores as architecture "llama" with
// experts. Files load through the llama record (arch_llama.cpp reads the expert keys too,
// and PreNormDecoder binds the MoE block when there are experts); this record is the file
// layout `synth --arch mixtral` writes and the quantization rules of such a file. Experts
// are feed_forward_length wide; softmax over the router logits, top-k, weights renormalised.
//
// Keys:    llama.{the llama keys, expert_count, expert_used_count}
// Tensors: token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm,
//          ffn_gate_inp, ffn_{gate,down,up}_exps [.., n_ff, n_expert]}, output_norm, output
// Forward: PreNormDecoder (decoder.cpp) with the MoE block (moe.cpp).
// Hugging Face: MixtralForCausalLM; Q/K rows permuted as llama's, router block_sparse_moe.gate,
//          experts block_sparse_moe.experts.E.{w1,w2,w3} stacked.
#include "model/block_tensors.h"
#include "model/decoder.h"
#include "model/moe.h"

namespace ember {

namespace {

constexpr MoeFamily kMoe{.gating = MoeGating::Softmax, .norm_weights = true, .width = ExpertWidth::Ff};

void read_hparams(const gguf::File& file, Hparams& hp) {  // what arch_llama.cpp reads
  hp.rope_neox = false;
  read_moe_hparams(file, hp, kMoe);
}

std::unique_ptr<ArchModel> bind(TensorBinder& b, const Hparams& hp) { return bind_prenorm_decoder(b, hp, false); }

using namespace block;
// HF's Mixtral names: w1 the gate, w2 the down and w3 the up projection of each expert.
constexpr BlockTensor kRouter{"ffn_gate_inp.weight", Embd, Expert, Router, "block_sparse_moe.gate.weight"};
constexpr BlockTensor kGateExps{"ffn_gate_exps.weight", Embd, Ff, FfnGate, "block_sparse_moe.experts.{}.w1.weight", Expert};
constexpr BlockTensor kDownExps{"ffn_down_exps.weight", Ff, Embd, FfnDown, "block_sparse_moe.experts.{}.w2.weight", Expert};
constexpr BlockTensor kUpExps{"ffn_up_exps.weight", Embd, Ff, FfnUp, "block_sparse_moe.experts.{}.w3.weight", Expert};
constexpr BlockTensor kBlock[] = {kAttnNorm, kAttnQ,  kAttnK,    kAttnV,    kAttnOutput,
                                  kFfnNorm,  kRouter, kGateExps, kDownExps, kUpExps};
constexpr const char* kHfClasses[] = {"MixtralForCausalLM"};

}  // namespace

extern const ArchInfo kArchMixtral{
    .name = "llama",
    .read_hparams = read_hparams,
    .bind = bind,
    .file = {.block = kBlock, .writes_rope_dims_and_vocab = true},
    .defaults = {.rope_base = 1000000.0f, .rms_eps = 1e-5f},
    .hf = {.classes = kHfClasses, .permute_qk = true},
    .quant = kMoeQuantRules,
    .alias = "mixtral",
    .default_experts = 8,
    .default_experts_used = 2,
    .moe = &kMoe,
};

}  // namespace ember
