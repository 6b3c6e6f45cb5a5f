#include "engine/draft/speculative.h"

#include <algorithm>

#include "sampling/sampler_chain.h"

namespace ember {

Candidates residual_distribution(const Candidates& p, std::span<const float> q_dense) {
  Candidates r;
  r.sorted = false;
  double mass = 0.0;
  for (const TokenCandidate& c : p.items) {
    const float q = static_cast<size_t>(c.id) < q_dense.size() ? q_dense[static_cast<size_t>(c.id)] : 0.0f;
    const float d = c.p - q;
    if (d > 0.0f) {
      r.items.push_back({c.id, c.logit, d});
      mass += d;
    }
  }
  if (r.items.empty() || !(mass > 0.0)) return p;
  for (TokenCandidate& c : r.items) c.p = static_cast<float>(c.p / mass);
  return r;
}

DraftVerdict verify_draft(SamplerChain& sampler, std::span<const float> logits, const DraftProposal& proposal, size_t i,
                          std::span<float> q_dense) {
  const Candidates p = sampler.apply(logits);
  const int32_t x = proposal.tokens[i];
  const double p_x = p.prob_of(x);
  const double q_x = proposal.deterministic() ? 1.0 : proposal.q[i].prob_of(x);
  if (accept_draft(p_x, q_x, sampler.rng().uniform01())) return {true, x};
  // q_i spread over the vocabulary for the residual, then zeroed again.
  auto set_q = [&](bool on) {
    if (proposal.deterministic()) {
      q_dense[static_cast<size_t>(x)] = on ? 1.0f : 0.0f;
      return;
    }
    for (const TokenCandidate& c : proposal.q[i].items)
      if (static_cast<size_t>(c.id) < q_dense.size()) q_dense[static_cast<size_t>(c.id)] = on ? c.p : 0.0f;
  };
  set_q(true);
  const int32_t token = sampler.draw(residual_distribution(p, q_dense));
  set_q(false);
  return {false, token};
}

}  // namespace ember
