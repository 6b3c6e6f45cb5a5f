#include "sampling/sampler_chain.h"

#include <cmath>
#include <unordered_map>
#include <vector>

#include "util/error.h"

namespace ember {

void validate(const SamplingParams& p) {
  if (!std::isfinite(p.temperature)) fail(ErrorKind::InvalidArgument, "--temp must be a finite number");
  if (!(p.top_p > 0.0f)) fail(ErrorKind::InvalidArgument, "--top-p must be > 0 (got {}; 1 disables it)", p.top_p);
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f))
    fail(ErrorKind::InvalidArgument, "--min-p must be in [0, 1] (got {})", p.min_p);
  if (!(p.repeat_penalty > 0.0f) || !std::isfinite(p.repeat_penalty))
    fail(ErrorKind::InvalidArgument, "--repeat-penalty must be > 0 (got {})", p.repeat_penalty);
  if (p.repeat_last_n < -1)
    fail(ErrorKind::InvalidArgument, "--repeat-last-n must be -1 (whole context), 0 (off) or positive (got {})",
         p.repeat_last_n);
  if (!std::isfinite(p.presence_penalty) || !std::isfinite(p.frequency_penalty))
    fail(ErrorKind::InvalidArgument, "--presence-penalty and --frequency-penalty must be finite");
}

SamplerChain::SamplerChain(const SamplingParams& params, int n_ctx) : params_(params) {
  validate(params_);
  const bool penalties = params_.repeat_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                         params_.frequency_penalty != 0.0f;
  if (penalties) {
    if (params_.repeat_last_n == -1)
      window_ = n_ctx > 0 ? static_cast<size_t>(n_ctx) : SIZE_MAX;
    else
      window_ = static_cast<size_t>(params_.repeat_last_n);
  }
  seed_ = params_.seed ? *params_.seed : random_seed();
  rng_.reseed(seed_);
}

void SamplerChain::accept(int32_t token) {
  if (window_ == 0) return;
  recent_.push_back(token);
  while (recent_.size() > window_) recent_.pop_front();
}

void SamplerChain::penalise(std::span<float> logits) const {
  std::unordered_map<int32_t, int> counts;
  for (int32_t t : recent_) ++counts[t];
  for (const auto& [token, count] : counts) {
    if (token < 0 || static_cast<size_t>(token) >= logits.size()) continue;
    float& l = logits[static_cast<size_t>(token)];
    // Dividing a negative logit would raise it, so negative ones are multiplied (CTRL paper,
    // as in llama.cpp).
    l = l <= 0.0f ? l * params_.repeat_penalty : l / params_.repeat_penalty;
    l -= static_cast<float>(count) * params_.frequency_penalty + params_.presence_penalty;
  }
}

Candidates SamplerChain::apply(std::span<const float> logits) const {
  std::vector<float> work;
  std::span<const float> source = logits;
  if (!recent_.empty()) {
    work.assign(logits.begin(), logits.end());
    penalise(work);
    source = work;
  }
  if (params_.greedy()) {
    const int32_t best = argmax(source);
    Candidates c;
    c.items.push_back({best, source[static_cast<size_t>(best)], 1.0f});
    c.sorted = true;
    return c;
  }
  Candidates c = make_candidates(source);
  keep_top_k(c, params_.top_k);
  keep_top_p(c, params_.top_p);
  keep_min_p(c, params_.min_p);
  scale_temperature(c, params_.temperature);
  softmax(c);
  return c;
}

int32_t SamplerChain::draw(const Candidates& candidates) {
  if (candidates.items.empty()) fail(ErrorKind::Internal, "draw from an empty distribution");
  double total = 0.0;
  for (const auto& t : candidates.items) total += t.p;
  const double u = rng_.uniform01() * total;
  double cumulative = 0.0;
  for (const auto& t : candidates.items) {
    cumulative += t.p;
    if (cumulative > u) return t.id;
  }
  return candidates.items.back().id;  // rounding left u at the very top of the mass
}

int32_t SamplerChain::sample(std::span<const float> logits) {
  const int32_t token = draw(apply(logits));
  accept(token);
  return token;
}

}  // namespace ember
