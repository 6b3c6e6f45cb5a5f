// The block tensors the families share, named as llama.cpp's GGUFs and the Llama lineage's
// Hugging Face checkpoints name them; each family's block table lists the ones its blocks
// hold, in its file order, beside any of its own.
#pragma once
#include "model/arch.h"

namespace ember::block {

using enum Dim;
using enum TensorRole;

inline constexpr BlockTensor kAttnNorm{"attn_norm.weight", Embd, None, Norm, "input_layernorm.weight"};
inline constexpr BlockTensor kAttnQ{"attn_q.weight", Embd, QRows, AttnQ, "self_attn.q_proj.weight"};
inline constexpr BlockTensor kAttnK{"attn_k.weight", Embd, KvRows, AttnK, "self_attn.k_proj.weight"};
inline constexpr BlockTensor kAttnV{"attn_v.weight", Embd, KvRows, AttnV, "self_attn.v_proj.weight"};
inline constexpr BlockTensor kAttnQBias{"attn_q.bias", QRows, None, Bias, "self_attn.q_proj.bias"};
inline constexpr BlockTensor kAttnKBias{"attn_k.bias", KvRows, None, Bias, "self_attn.k_proj.bias"};
inline constexpr BlockTensor kAttnVBias{"attn_v.bias", KvRows, None, Bias, "self_attn.v_proj.bias"};
inline constexpr BlockTensor kAttnQNorm{"attn_q_norm.weight", Head, None, Norm, "self_attn.q_norm.weight"};
inline constexpr BlockTensor kAttnKNorm{"attn_k_norm.weight", Head, None, Norm, "self_attn.k_norm.weight"};
inline constexpr BlockTensor kAttnOutput{"attn_output.weight", QRows, Embd, AttnOutput, "self_attn.o_proj.weight"};
// The norm before the FFN; HF names it after the attention it follows.
inline constexpr BlockTensor kFfnNorm{"ffn_norm.weight", Embd, None, Norm, "post_attention_layernorm.weight"};
inline constexpr BlockTensor kFfnGate{"ffn_gate.weight", Embd, Ff, FfnGate, "mlp.gate_proj.weight"};
inline constexpr BlockTensor kFfnUp{"ffn_up.weight", Embd, Ff, FfnUp, "mlp.up_proj.weight"};
inline constexpr BlockTensor kFfnDown{"ffn_down.weight", Ff, Embd, FfnDown, "mlp.down_proj.weight"};

// Sandwich norms (gemma2, gemma3): HF's post_attention_layernorm follows the attention here,
// and the norm before the FFN is its own.
inline constexpr BlockTensor kPostAttnNorm{"post_attention_norm.weight", Embd, None, Norm,
                                           "post_attention_layernorm.weight"};
inline constexpr BlockTensor kPreFfnNorm{"ffn_norm.weight", Embd, None, Norm, "pre_feedforward_layernorm.weight"};
inline constexpr BlockTensor kPostFfnNorm{"post_ffw_norm.weight", Embd, None, Norm, "post_feedforward_layernorm.weight"};

// Mixture of experts (model/moe.h). Experts are 3-D, [ne0, ne1, n_expert]; Hugging Face
// keeps one 2-D tensor per expert, stacked in expert order as convert_hf_to_gguf does (the
// names of qwen2moe, qwen3moe and olmoe; mixtral has its own). Families whose experts are
// --ff wide (mixtral, olmoe) use the *Ff variants.
inline constexpr BlockTensor kFfnGateInp{"ffn_gate_inp.weight", Embd, Expert, Router, "mlp.gate.weight"};
inline constexpr BlockTensor kFfnGateExps{"ffn_gate_exps.weight", Embd, FfExp, FfnGate, "mlp.experts.{}.gate_proj.weight", Expert};
inline constexpr BlockTensor kFfnDownExps{"ffn_down_exps.weight", FfExp, Embd, FfnDown, "mlp.experts.{}.down_proj.weight", Expert};
inline constexpr BlockTensor kFfnUpExps{"ffn_up_exps.weight", Embd, FfExp, FfnUp, "mlp.experts.{}.up_proj.weight", Expert};
inline constexpr BlockTensor kFfnGateExpsFf{"ffn_gate_exps.weight", Embd, Ff, FfnGate, "mlp.experts.{}.gate_proj.weight", Expert};
inline constexpr BlockTensor kFfnDownExpsFf{"ffn_down_exps.weight", Ff, Embd, FfnDown, "mlp.experts.{}.down_proj.weight", Expert};
inline constexpr BlockTensor kFfnUpExpsFf{"ffn_up_exps.weight", Embd, Ff, FfnUp, "mlp.experts.{}.up_proj.weight", Expert};
// The shared expert's gate is a [1, n_embd] Linear in HF, a [n_embd] vector here (llama.cpp
// loads either).
inline constexpr BlockTensor kFfnGateInpShexp{"ffn_gate_inp_shexp.weight", Embd, None, Router, "mlp.shared_expert_gate.weight"};
inline constexpr BlockTensor kFfnGateShexp{"ffn_gate_shexp.weight", Embd, FfShexp, FfnGate, "mlp.shared_expert.gate_proj.weight"};
inline constexpr BlockTensor kFfnDownShexp{"ffn_down_shexp.weight", FfShexp, Embd, FfnDown, "mlp.shared_expert.down_proj.weight"};
inline constexpr BlockTensor kFfnUpShexp{"ffn_up_shexp.weight", Embd, FfShexp, FfnUp, "mlp.shared_expert.up_proj.weight"};

}  // namespace ember::block
