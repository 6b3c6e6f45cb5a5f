// Which type each tensor gets for a target file type: ember's restatement of the rules of
// llama.cpp's llama_tensor_get_type for the types ember writes.
//
//  1. Tensors with one dimension (norms, biases) stay F32.
//  2. F32 / F16 / BF16 targets: every other tensor takes that type.
//  3. The output projection (output.weight, or token_embd.weight when the model has no
//     separate output and ties them) gets Q6_K, except for a Q8_0 target (stays Q8_0).
//  4. Q4_K_M and Q5_K_M: the i-th attn_v.weight and the i-th ffn_down.weight (the tensors
//     the family's QuantRules name so, model/arch.h) get Q6_K when
//     more_bits(i, n_layer) holds: the first and last eighth and every third one in between
//     ((i - n/8) % 3 == 2). Like llama.cpp, i counts these tensors in file order, which is
//     not the layer number when a file lists blk.10 before blk.2.
//  5. Q4_K (= llama.cpp's Q4_K_S): attn_v with i < 4 and ffn_down with i < n_layer/8 get
//     Q5_K.
//  6. A row length the chosen type's block does not divide falls back (fallback_type():
//     Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0, then F16).
//  7. Mixture of experts: the routers (ffn_gate_inp) stay F32; with experts, rules 4 and 5
//     take i from the tensor's layer (one layer may hold ffn_down_exps and ffn_down_shexp);
//     with exactly 8 experts (Mixtral) attn_v and attn_k get Q8_0, and attn_output Q5_K for
//     Q4_K and Q4_K_M.
//  8. MXFP4_MOE (gpt-oss's release type): 3-D expert tensors MXFP4, every other matrix
//     (the output and token embedding included) Q8_0; rules 1 and 7 still apply.
// Dropped relative to llama.cpp: rules for types ember does not write (Q2_K, Q3_K, IQ*)
// and falcon/70B special cases.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "model/arch.h"
#include "quantize/ftype.h"

namespace ember::quantize {

// The layers whose attn_v / ffn_down a _M mix stores with more bits.
bool more_bits(int layer, int n_layer);

class TypePlan {
 public:
  // n_layer: transformer blocks; has_output: the model has its own output.weight;
  // file_order: every tensor name in the order the output file stores them (empty: the
  // order is blk.0, blk.1, ... and the layer number is the ordinal); rules: the family's
  // (ArchInfo::quant; a file of an unknown family gets the dense families'); n_expert: the
  // file's expert_count (rule 7).
  TypePlan(FileType file_type, int n_layer, bool has_output, const std::vector<std::string>& file_order = {},
           const QuantRules& rules = kDenseQuantRules, int n_expert = 0);
  // The type for tensor `name` of shape ne0-first.
  DType type_for(std::string_view name, const std::vector<int64_t>& shape) const;
  DType expert_rule(std::string_view name, DType t) const;  // rule 7 for 8 experts
  const FileType& file_type() const { return ft_; }

 private:
  int ordinal(std::string_view name) const;  // i of rules 4 and 5
  bool is_value(std::string_view name) const;  // an attn_v of rules 4 and 5
  bool is_down(std::string_view name) const;   // an ffn_down of rules 4 and 5

  FileType ft_;
  QuantRules rules_;
  int n_layer_;
  int n_expert_;
  bool has_output_;
  std::map<std::string, int, std::less<>> ordinals_;
};

}  // namespace ember::quantize
