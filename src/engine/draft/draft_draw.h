// How a draft model draws its tokens (for the scheduler's batched draft, draft_batch.h): from
// q = the draft's logits after the SAME sampler transforms the target uses (penalties over
// the same window, top-k/p, min-p, temperature), with its own random stream.
#pragma once
#include <vector>

#include "engine/draft/draft_source.h"
#include "sampling/rng.h"
#include "sampling/sampler_chain.h"

namespace ember {

// The draft's random stream for a target seeded with `target_seed`: unrelated to the
// target's (a uniform shared with the acceptance test would bias the result).
Rng draft_stream(uint64_t target_seed);

// Draws one draft token from `logits` by `chain` (the target's settings and penalty window,
// the draft's own rng), `banned` tokens at probability 0, and appends it with its q to
// `out`, unless it is an id the target lacks (>= id_limit). Returns whether drafting may go
// on after it: false when nothing was appended or the token is in `eog`. `scratch` holds
// the masked logits.
bool draw_draft_token(SamplerChain& chain, std::span<const float> logits, std::span<const int32_t> banned,
                      std::span<const int32_t> eog, int32_t id_limit, std::vector<float>& scratch, DraftProposal& out);

}  // namespace ember
