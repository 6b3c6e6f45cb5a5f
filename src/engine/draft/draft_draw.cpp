#include "engine/draft/draft_draw.h"

#include <algorithm>
#include <cmath>

#include "sampling/rng.h"

namespace ember {

Rng draft_stream(uint64_t target_seed) {
  uint64_t state = target_seed ^ 0x6472616674ull;  // "draft"
  return Rng(splitmix64_next(state));
}

bool draw_draft_token(SamplerChain& chain, std::span<const float> logits, std::span<const int32_t> banned,
                      std::span<const int32_t> eog, int32_t id_limit, std::vector<float>& scratch, DraftProposal& out) {
  scratch.assign(logits.begin(), logits.end());
  for (int32_t id : banned)
    if (id >= 0 && static_cast<size_t>(id) < scratch.size()) scratch[static_cast<size_t>(id)] = -INFINITY;
  Candidates q = chain.apply(scratch);
  const int32_t token = chain.draw(q);
  // A token the target does not have can never be accepted: stop before it.
  if (token >= id_limit) return false;
  chain.accept(token);
  out.tokens.push_back(token);
  out.q.push_back(std::move(q));
  return std::find(eog.begin(), eog.end(), token) == eog.end();
}

}  // namespace ember
