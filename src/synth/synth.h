// Synthetic models: every tensor an architecture needs, filled with seeded pseudo-random
// values whose scales keep activations and logits in a realistic range, written directly in
// the target type and streamed to disk. The tokenizer comes from a real vocabulary GGUF so
// the result is a complete, runnable model (its text is noise, its cost is real).
#pragma once
#include <cstdint>
#include <string>

#include "model/arch.h"
#include "quantize/ftype.h"

namespace ember {
class ThreadPool;
}

namespace ember::synth {

struct SynthOptions {
  ModelShape shape;            // n_vocab is taken from the vocabulary file
  std::string vocab_path;      // GGUF whose tokenizer.* keys are copied
  quantize::FileType type = quantize::parse_file_type("f16");
  uint64_t seed = 0;
  // Tokens of the model: 0 takes the vocabulary's; more pads it with control tokens
  // "<|synth_pad_N|>" (a Llama-3-sized head from a smaller vocabulary file).
  int64_t n_vocab = 0;
};

// TinyLlama-1.1B's shape (2048 wide, 22 blocks, 32/4 heads, ff 5632, ctx 2048) with the
// family's defaults (ArchInfo::defaults: norm epsilon, RoPE base, sliding window, tied head).
ModelShape default_shape(const ArchInfo& arch);

// Standard deviation (and mean, for norms) of a tensor's synthetic values:
//   projections q/k/v/gate/up   1/sqrt(fan_in)              (unit-variance outputs; also routers)
//   attn_output / ffn_down      1/sqrt(fan_in * 2 n_layer)  (residual stream grows slowly)
//   token_embd / output         2.5/sqrt(n_embd)            (logit std ~2.5 for unit-RMS input)
//   norm weights                mean 1, std 0.02; biases mean 0, std 0.02
struct InitScale {
  float mean;
  float std;
};
InitScale init_scale(const TensorSpec& spec, const ModelShape& shape);

// Row `row` of a tensor with seed `tensor_seed`: n values, approximately normal (sum of four
// 16-bit uniforms), independent of thread count and of the order rows are produced in.
void fill_row(uint64_t tensor_seed, int64_t row, InitScale scale, float* out, int64_t n);

// The per-tensor seed: a hash of the model seed and the tensor name.
uint64_t tensor_seed(uint64_t seed, const std::string& name);

struct SynthStats {
  size_t n_tensors = 0;
  uint64_t n_params = 0;
  uint64_t file_bytes = 0;
};

SynthStats synth_model(const SynthOptions& options, const std::string& out_path, ThreadPool* pool);

}  // namespace ember::synth
