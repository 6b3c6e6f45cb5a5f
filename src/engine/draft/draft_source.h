// Where draft tokens come from: a small draft model (draft_model.h) or n-gram lookup in the
// context (ngram_draft.h). The speculative decoder (speculative.h) verifies what a source
// proposes; exactness only needs each proposed token x_i to come with the probability q_i(x_i)
// it was proposed with, and the whole distribution q_i for the rejection residual.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/candidates.h"

namespace ember {

struct DraftProposal {
  std::vector<int32_t> tokens;
  // q[i]: the distribution tokens[i] was drawn from. Empty for deterministic sources: each
  // token then had probability 1 (q is one-hot).
  std::vector<Candidates> q;
  // Context tokens the source had to process before drafting (a draft model catching up on
  // what it has not seen: large after drafting was off a while, not a per-token cost).
  int caught_up = 0;
  bool deterministic() const { return q.empty(); }
  void clear() {
    tokens.clear();
    q.clear();
    caught_up = 0;
  }
};

class DraftSource {
 public:
  virtual ~DraftSource() = default;
  // Proposes up to max_tokens tokens to follow `context` (every token so far, the last one
  // included even though the target has not decoded it yet), each with an id < id_limit.
  // Stopping early (no match, an end-of-generation token) is fine: the decision may depend on
  // the draft's own draws, never on the target's.
  virtual void propose(std::span<const int32_t> context, int max_tokens, int32_t id_limit, DraftProposal& out) = 0;
  // Reads the prompt (`context`: what the target holds after its prefill) before generation
  // starts, so a draft model's prefill is prompt time, as the target's is, not a first-round
  // catch-up charged to generation.
  virtual void prepare(std::span<const int32_t> /*context*/) {}
  // Forgets everything seen (benchmarks repeat runs from the same state).
  virtual void reset() {}
  // True when a proposal costs real time (a model), so the decoder weighs it against the gain.
  virtual bool costly() const = 0;
  virtual const char* name() const = 0;
};

}  // namespace ember
