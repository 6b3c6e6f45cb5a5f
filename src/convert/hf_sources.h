// Which tensors of a Hugging Face checkpoint each GGUF tensor of `convert hf` reads, checked
// (shape, dtype) before anything is written.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "convert/safetensors.h"

namespace ember {
struct TensorSpec;
}

namespace ember::convert {

// The checkpoint's tensors and where the language model's sit among them.
struct HfTensors {
  SafetensorsModel st;
  std::string prefix;                  // "model.", or a multimodal model's language-model prefix
  const SafeTensor* embed = nullptr;   // [n_vocab, n_embd]
  const SafeTensor* lm_head = nullptr; // nullptr: tied
};

HfTensors open_tensors(const std::string& dir);

// The rows of one GGUF tensor: a 2-D tensor's, or a 3-D expert tensor's expert by expert,
// from one HF tensor per expert (stacked as convert_hf_to_gguf's torch.stack) or from
// transformers v5's fused [n_expert, rows, cols] tensor (a part of each expert's rows).
struct RowSources {
  std::vector<const SafeTensor*> tensors;  // one, or one per expert
  int64_t expert_rows = 0;  // a fused tensor's rows per expert; 0: one tensor per expert
  int64_t first_row = 0;    // where this part begins within each expert's fused rows
  // Row r of expert e (0 outside the experts) into out[0, cols).
  void read(int64_t e, int64_t r, int64_t cols, float* out) const {
    if (expert_rows == 0) tensors[static_cast<size_t>(e)]->read_row(r, cols, out);
    else tensors[0]->read_row(e * expert_rows + first_row + r, cols, out);
  }
};

RowSources sources_of(const TensorSpec& spec, const HfTensors& t, const std::string& dir);

}  // namespace ember::convert
