// The mixture-of-experts FFN block every MoE family shares, as llama.cpp's build_moe_ffn
// computes it: router logits, the selection (MoeRouting: softmax then top-k with or without
// renormalisation, top-k then softmax, a selection-only bias), the chosen experts' SwiGLU
// through the expert matmul (ops::matmul_id), their weighted sum, and an optional shared
// expert with or without a sigmoid gate. Families differ only in MoeRouting and in which
// tensors they have.
#pragma once
#include <vector>

#include "backend/ops.h"
#include "model/layers.h"

namespace ember {

namespace gguf { class File; }
class TensorBinder;

struct MoeWeights {
  MatView router;                       // [n_embd -> n_expert] (ffn_gate_inp)
  MatView router_bias;                  // [1 x n_expert] added to the logits (ffn_gate_inp.bias), optional
  std::vector<MatView> gate, up, down;  // [n_expert] slices: [n_embd -> n_ff_exp] x2, [n_ff_exp -> n_embd]
  // Per-expert biases (ffn_{gate,up,down}_exps.bias, gpt-oss), optional: f32 tables of one
  // row per expert, [n_expert x n_ff_exp] x2 and [n_expert x n_embd].
  MatView gate_bias, up_bias, down_bias;
  Activation act = Activation::SiLU;    // the experts' gated unit (MoeFamily::act)
  MoeRouting routing;                   // selection_bias: exp_probs_b when the file has one
  int n_ff_exp = 0;
  FfnWeights shared;                    // shared expert (ffn_{gate,up,down}_shexp); n_ff == 0: none
  MatView shared_gate;                  // [n_embd -> 1] its sigmoid gate (ffn_gate_inp_shexp), optional
  bool active() const { return router.data != nullptr; }
};

// Where an expert's FFN width comes from: the expert_feed_forward_length key (default
// feed_forward_length / expert_used_count; the qwen MoE families), or feed_forward_length
// itself (mixtral, olmoe: llama.cpp reads no other key for them).
enum class ExpertWidth { Key, Ff };

// How a family's MoE layers are set up, beyond what its file says.
struct MoeFamily {
  MoeGating gating = MoeGating::Softmax;
  bool norm_weights = false;       // renormalise the chosen weights (MoeRouting::norm_weights)
  bool shared_expert = false;      // ffn_*_shexp, width expert_shared_feed_forward_length (default n_ff)
  ExpertWidth width = ExpertWidth::Key;
  Activation act = Activation::SiLU;  // the experts' gated unit (gpt-oss: SwiGLUOai)
  bool required = true;            // false: a file without experts is the dense family (llama)
};

// Reads <arch>.expert_count, expert_used_count, the experts' widths and
// expert_weights_scale into hp (n_expert, n_expert_used, n_ff_exp, n_ff_shexp, moe_routing,
// moe_act).
// expert_count absent or <= 1 leaves hp dense where the family allows it, as llama.cpp.
void read_moe_hparams(const gguf::File& file, Hparams& hp, const MoeFamily& family);

// Binds layer il's router, expert tensors (ffn_{gate,up,down}_exps), the optional router and
// expert biases (.bias of each, as llama.cpp's build_moe_ffn takes them for any family),
// optional exp_probs_b and, when hp.n_ff_shexp > 0, the shared expert with its optional gate.
MoeWeights bind_moe(TensorBinder& b, const Hparams& hp, int il);

}  // namespace ember
