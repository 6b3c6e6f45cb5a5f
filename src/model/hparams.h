// Reading hyperparameters from GGUF metadata keys "<arch>.<name>" as llama.cpp writes them.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "model/model.h"

namespace ember {

namespace gguf { class File; }

// Reads the keys every transformer family shares (embedding_length, block_count, heads,
// context_length, feed_forward_length, rms epsilon, rope.*) into hp; hp.arch must be set.
// n_vocab comes from the rows of token_embd.weight.
void read_common_hparams(const gguf::File& file, Hparams& hp);

// llama.cpp's yarn_attn_factor for a YaRN scaling `factor` (before rope.scaling.attn_factor):
// mscale(factor, 1) / mscale(factor, log_mul) with a rope.scaling.yarn_log_multiplier (else
// mscale(factor, 1)), mscale(f, m) = 1 + 0.1 m ln f, divided by the 1 + 0.1 ln factor that
// ggml's rope_yarn multiplies back in.
float yarn_attn_factor(float factor, float log_mul);

// "<arch>.<key>" lookups for the architecture files.
std::optional<uint32_t> arch_u32(const gguf::File& file, const Hparams& hp, const char* key);
std::optional<float> arch_f32(const gguf::File& file, const Hparams& hp, const char* key);
// A key that is either a scalar or an array of n_layer integers.
std::vector<int> arch_per_layer(const gguf::File& file, const Hparams& hp, const char* key, int fallback);

}  // namespace ember
