// Sampling settings, with llama.cpp's defaults and flag meanings.
#pragma once
#include <cstdint>
#include <optional>

namespace ember {

struct SamplingParams {
  float temperature = 0.8f;        // logits are divided by it; <= 0 means greedy (argmax)
  int top_k = 40;                  // keep the k most likely tokens; <= 0 disables
  float top_p = 0.95f;             // keep the smallest prefix with mass >= top_p; >= 1 disables
  float min_p = 0.05f;             // keep tokens with p >= min_p * p_max; <= 0 disables
  float repeat_penalty = 1.0f;     // CTRL-style penalty on recent tokens; 1 disables
  int repeat_last_n = 64;          // window of recent tokens penalised; 0 disables, -1 = context
  float presence_penalty = 0.0f;   // subtracted once from recent tokens' logits
  float frequency_penalty = 0.0f;  // subtracted per occurrence in the window
  std::optional<uint64_t> seed;    // no value: drawn from the OS entropy source

  bool greedy() const { return !(temperature > 0.0f); }
};

// Throws Error(InvalidArgument) naming the first setting out of range.
void validate(const SamplingParams& params);

}  // namespace ember
