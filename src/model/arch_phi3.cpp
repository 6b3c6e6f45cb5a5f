// phi3: Phi-3 / Phi-3.5 mini and medium, Phi-4, Phi-4-mini.
//
// - The Llama-style pre-norm decoder (PreNormDecoder) with two fused tensors, split into
//   their parts at load: attn_qkv.weight holds Q, K and V's rows in that order, ffn_up.weight
//   the gate's n_ff rows then the up projection's (HF gate_up_proj, chunked in two).
// - Neox RoPE, partial when rope.dimension_count < head size (Phi-4-mini).
// - LongRoPE (the 128k models): per-pair frequency divisors rope_factors_short.weight and
//   rope_factors_long.weight, the long ones in a context beyond
//   rope.scaling.original_context_length tokens (as llama.cpp chooses), and cos/sin scaled by
//   rope.scaling.attn_factor.
// - attention.sliding_window (Phi-3-mini: 2047; 0 for Phi-4) is honoured on every layer, as
//   Hugging Face's Phi3 attends; llama.cpp currently ignores it, which only matters for
//   contexts longer than the window.
//
// Keys:    phi3.{context_length, embedding_length, block_count, feed_forward_length,
//          attention.head_count, attention.head_count_kv, attention.layer_norm_rms_epsilon,
//          attention.sliding_window, rope.dimension_count, rope.freq_base,
//          rope.scaling.{original_context_length, attn_factor}}
// Tensors: token_embd, rope_factors_{long,short} (optional), blk.N.{attn_norm, attn_qkv,
//          attn_output, ffn_norm, ffn_up (gate+up), ffn_down}, output_norm, output (optional)
// Hugging Face: Phi3ForCausalLM, whose checkpoints hold the same fused qkv_proj and
//          gate_up_proj; LongRoPE (rope_scaling "longrope") and partial rotary do not convert yet.
#include "gguf/gguf.h"
#include "model/block_tensors.h"
#include "model/decoder.h"
#include "model/hparams.h"
#include "model/layers.h"
#include "model/weights.h"
#include "util/error.h"

namespace ember {
namespace {

void read_hparams(const gguf::File& file, Hparams& hp) {
  hp.rope_neox = true;
  if (file.find_tensor("blk.0.ffn_gate_inp.weight"))
    fail(ErrorKind::Unsupported, "{}: mixture-of-experts phi3 models (PhiMoE) are not supported", file.source());
  if (file.find_tensor("blk.0.attn_qkv.bias"))
    fail(ErrorKind::Unsupported, "{}: phi3 attn_qkv.bias is not supported", file.source());
}

// Q, K and V as row ranges of attn_qkv.weight.
AttnWeights bind_fused_attention(TensorBinder& b, const Hparams& hp, int il) {
  const int64_t nq = static_cast<int64_t>(hp.n_head) * hp.head_dim, nk = hp.n_embd_k_gqa(), nv = hp.n_embd_v_gqa();
  const std::string qkv = blk(il, "attn_qkv.weight");
  AttnWeights w;
  w.wq = b.matmul_matrix_rows(qkv, hp.n_embd, nq + nk + nv, 0, nq);
  w.wk = b.matmul_matrix_rows(qkv, hp.n_embd, nq + nk + nv, nq, nk);
  w.wv = b.matmul_matrix_rows(qkv, hp.n_embd, nq + nk + nv, nq + nk, nv);
  w.wo = b.matmul_matrix(blk(il, "attn_output.weight"), nq, hp.n_embd);
  return w;
}

// gate and up as the two halves of ffn_up.weight.
FfnWeights bind_fused_ffn(TensorBinder& b, const Hparams& hp, int il) {
  FfnWeights w;
  w.n_ff = hp.n_ff[il];
  const std::string up = blk(il, "ffn_up.weight");
  w.gate = b.matmul_matrix_rows(up, hp.n_embd, 2 * w.n_ff, 0, w.n_ff);
  w.up = b.matmul_matrix_rows(up, hp.n_embd, 2 * w.n_ff, w.n_ff, w.n_ff);
  w.down = b.matmul_matrix(blk(il, "ffn_down.weight"), w.n_ff, hp.n_embd);
  return w;
}

std::unique_ptr<ArchModel> bind(TensorBinder& b, const Hparams& hp) {
  auto m = bind_prenorm_decoder(b, hp, bind_fused_attention, bind_fused_ffn);
  const int window = static_cast<int>(arch_u32(b.file(), hp, "attention.sliding_window").value_or(0));
  for (LayerAttention& a : m->attention) a.window = window;
  bind_rope_factors(b, hp, m->attention);
  return m;
}

constexpr BlockTensor kAttnQkv{"attn_qkv.weight", Dim::Embd, Dim::QkvRows, TensorRole::AttnQ, "self_attn.qkv_proj.weight"};
constexpr BlockTensor kFfnGateUp{"ffn_up.weight", Dim::Embd, Dim::Ff2, TensorRole::FfnUp, "mlp.gate_up_proj.weight"};
using namespace block;
constexpr BlockTensor kBlock[] = {kAttnNorm, kAttnQkv, kAttnOutput, kFfnNorm, kFfnGateUp, kFfnDown};
constexpr const char* kHfClasses[] = {"Phi3ForCausalLM"};
// llama.cpp's mixes count attn_qkv among the attention-value tensors (category_is_attn_v).
constexpr const char* kValueTensors[] = {"attn_qkv.weight"};

}  // namespace

extern const ArchInfo kArchPhi3{
    .name = "phi3",
    .read_hparams = read_hparams,
    .bind = bind,
    .file = {.block = kBlock, .writes_rope_dims_and_vocab = true},
    .defaults = {.rope_base = 10000.0f, .rms_eps = 1e-5f, .sliding_window = 2047},
    .hf = {.classes = kHfClasses},
    .quant = {kValueTensors, kDenseDownTensors},
};

}  // namespace ember
