// The sampler chain, in llama.cpp's order: repetition/presence/frequency penalties ->
// top-k -> top-p -> min-p -> temperature -> seeded draw. Greedy (temperature <= 0) is the
// argmax of the penalised logits, ties -> lowest id.
//
// apply() and draw() are separate on purpose: speculative decoding needs the final
// distribution of both target and draft (p and q after the same transforms) before it
// decides, and it draws its own uniforms from rng().
#pragma once
#include <cstdint>
#include <deque>
#include <span>

#include "sampling/candidates.h"
#include "sampling/params.h"
#include "sampling/rng.h"

namespace ember {

class SamplerChain {
 public:
  // n_ctx is the context length, used when repeat_last_n is -1. Validates params; the seed
  // is params.seed or a fresh random one (see seed()).
  explicit SamplerChain(const SamplingParams& params, int n_ctx = 0);

  // The distribution the next token is drawn from: candidates sorted by descending
  // probability (ties by ascending id) whose p sum to 1. Greedy gives one token with p = 1.
  // Does not change the chain's state.
  Candidates apply(std::span<const float> logits) const;

  // Draws from a distribution produced by apply(): the first candidate whose cumulative
  // probability exceeds u * total, u = rng().uniform01().
  int32_t draw(const Candidates& candidates);

  // apply() + draw() + accept().
  int32_t sample(std::span<const float> logits);

  // Records a token (prompt or generated) in the penalty window.
  void accept(int32_t token);
  // Forgets the penalty window (new conversation, cleared context).
  void reset_history() { recent_.clear(); }
  // Restarts the random stream from the seed (identical reruns in one process).
  void reseed() { rng_.reseed(seed_); }

  uint64_t seed() const { return seed_; }
  const SamplingParams& params() const { return params_; }
  Rng& rng() { return rng_; }

 private:
  // The logits with penalties applied to tokens in the recent window.
  void penalise(std::span<float> logits) const;

  SamplingParams params_;
  size_t window_ = 0;  // penalty window length in tokens (0: no penalties)
  uint64_t seed_ = 0;
  Rng rng_;
  std::deque<int32_t> recent_;
};

}  // namespace ember
