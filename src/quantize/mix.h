// Which type each tensor gets for a target file type: ember's restatement of the rules of
// llama.cpp's llama_tensor_get_type for the types ember writes.
//
//  1. Tensors with one dimension (norms, biases) stay F32.
//  2. F32 / F16 / BF16 targets: every other tensor takes that type.
//  3. The output projection (output.weight, or token_embd.weight when the model has no
//     separate output and ties them) gets Q6_K, except for a Q8_0 target (stays Q8_0).
//  4. Q4_K_M and Q5_K_M: attn_v.weight and ffn_down.weight of the layers where
//     more_bits(layer, n_layer) holds get Q6_K: the first and last eighth of the layers and
//     every third layer in between ((i - n/8) % 3 == 2).
//  5. Q4_K (= llama.cpp's Q4_K_S): attn_v of layers 0..3 and ffn_down of the first eighth
//     of the layers get Q5_K.
//  6. A row length the chosen type's block does not divide falls back (fallback_type():
//     Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0, then F16).
// Dropped relative to llama.cpp: rules for types ember does not write (Q2_K, Q3_K, IQ*),
// mixture-of-experts and falcon/70B special cases.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "quantize/ftype.h"

namespace ember::quantize {

// The layers whose attn_v / ffn_down a _M mix stores with more bits.
bool more_bits(int layer, int n_layer);

class TypePlan {
 public:
  // n_layer: transformer blocks; has_output: the model has its own output.weight.
  TypePlan(FileType file_type, int n_layer, bool has_output);
  // The type for tensor `name` of shape ne0-first.
  DType type_for(std::string_view name, const std::vector<int64_t>& shape) const;
  const FileType& file_type() const { return ft_; }

 private:
  FileType ft_;
  int n_layer_;
  bool has_output_;
};

}  // namespace ember::quantize
