// A draft model as a DraftSource: its own Context (KV cache) follows the context it is asked
// about (longest common prefix kept, the rest rolled back and decoded in one batch), then it
// samples tokens one at a time from q = the draft's logits after the SAME sampler transforms
// the target uses (penalties over the same window, top-k/p, min-p, temperature), with its own
// random stream (a uniform shared with the target's acceptance test would bias the result).
// The settings are read from the target's chain at every proposal, so a chat's /set (which
// replaces the target's chain between turns) applies to the draft as well.
#pragma once
#include <vector>

#include "engine/draft_source.h"
#include "sampling/rng.h"
#include "sampling/sampler_chain.h"

namespace ember {

class Context;

// The draft's random stream for a target seeded with `target_seed`: unrelated to the
// target's (a uniform shared with the acceptance test would bias the result).
Rng draft_stream(uint64_t target_seed);

// Draws one draft token from `logits` by `chain` (the target's settings and penalty window,
// the draft's own rng), `banned` tokens at probability 0, and appends it with its q to
// `out`, unless it is an id the target lacks (>= id_limit). Returns whether drafting may go
// on after it: false when nothing was appended or the token is in `eog`. `scratch` holds
// the masked logits. Shared by DraftModel and the scheduler's batched draft (draft_batch.h).
bool draw_draft_token(SamplerChain& chain, std::span<const float> logits, std::span<const int32_t> banned,
                      std::span<const int32_t> eog, int32_t id_limit, std::vector<float>& scratch, DraftProposal& out);

class DraftModel final : public DraftSource {
 public:
  // `target_sampler` provides the settings (and the seed, from which the draft's own stream is
  // derived); it must outlive this object. `banned` tokens get probability 0 (--ignore-eos),
  // as they do for the target.
  DraftModel(Context& draft_ctx, const SamplerChain& target_sampler, std::vector<int32_t> banned = {});

  void propose(std::span<const int32_t> context, int max_tokens, int32_t id_limit, DraftProposal& out) override;
  void prepare(std::span<const int32_t> context) override;
  void reset() override;
  bool costly() const override { return true; }
  const char* name() const override { return "draft model"; }

  void set_eog(std::vector<int32_t> eog) { eog_ = std::move(eog); }
  int tokens_held() const { return static_cast<int>(held_.size()); }

 private:
  // Makes the draft's cache hold context[0, n-1) and returns the logits after context[n-1].
  std::span<const float> follow(std::span<const int32_t> context);
  // Samples up to max_tokens tokens from `logits` on (the logits after the context).
  void draw(std::span<const float> logits, int max_tokens, int32_t id_limit, DraftProposal& out);

  Context& ctx_;
  const SamplerChain& target_;  // the settings to follow
  SamplerChain chain_;  // a copy of target_'s settings + the penalty window; its rng draws the draft tokens
  Rng rng_;             // the draft's own stream, kept between proposals
  uint64_t seed_ = 0;   // the target seed rng_ was derived from
  std::vector<int32_t> banned_, eog_;
  std::vector<int32_t> held_;  // tokens in the draft's KV cache, in order
  std::vector<float> logits_;
};

}  // namespace ember
