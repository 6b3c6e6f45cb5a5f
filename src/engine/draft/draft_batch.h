// A draft model inside the continuous-batching scheduler (scheduler.h): one draft Context
// over the same sequence slots as the target's, where each drafting sequence's draft cache
// follows its tokens. Every step the scheduler hands over one job per drafting sequence it
// planned; run() then
//   1. trims each slot's draft cache to the longest prefix it shares with the sequence's
//      tokens (the rejected drafts of the last step go),
//   2. decodes every sequence's catch-up rows in ONE decode() call: the tokens the target
//      computed or emitted since (a prompt chunk mirrored, the last token and the accepted
//      drafts), within its own token budget (the scheduler's --batch-tokens, separate from
//      the target's) and what the draft's block pool holds,
//   3. draws draft token i of every sequence still drafting from the logits, and decodes
//      them all in one decode() call per position.
// A sequence drafts only once its catch-up is complete; one that lags (budget, pool) just
// drafts nothing that step. The draft never decides an output token, only proposes it, so
// any shortfall here costs speed, never exactness.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "engine/draft/draft_source.h"
#include "model/model.h"
#include "sampling/sampler_chain.h"

namespace ember {

struct BatchDraftJob {
  int slot = 0;
  std::span<const int32_t> tokens;  // the sequence's tokens (prompt + generated)
  int goal = 0;                     // tokens[0, goal) in the draft cache after the catch-up
  int k = 0;                        // tokens to draft after tokens (needs goal == tokens.size()); 0: catch up only
  SamplerChain* chain = nullptr;    // k > 0: the sequence's settings and penalty window, the draft's own rng
  std::span<const int32_t> eog;     // drafting stops after one of these
  std::span<const int32_t> banned;  // never drafted (the target bans them: --ignore-eos)
  DraftProposal* out = nullptr;     // k > 0: cleared, then the drafted tokens with their q
};

class BatchDraft {
 public:
  // `draft`: the draft model's context, with at least the target's sequences; `budget`:
  // catch-up rows per step; `id_limit`: drafted ids stay below it (the target's vocabulary).
  BatchDraft(Context& draft, int budget, int32_t id_limit);

  void run(std::span<BatchDraftJob> jobs);
  // A sequence enters `slot`: the draft's prefix cache may already hold its start.
  void attach(int slot, std::span<const int32_t> tokens);
  // The sequence in `slot` left (finished, cancelled, preempted): its draft blocks go back.
  void clear(int slot);

  const Context& context() const { return ctx_; }
  int64_t decoded_tokens() const { return decoded_; }  // rows of every draft decode() so far

 private:
  struct Planned {
    BatchDraftJob* job;
    int rows = 0;        // catch-up rows this step
    bool drafts = false; // the catch-up completes and the job drafts
  };
  void trim(const BatchDraftJob& job);
  std::vector<Planned> plan(std::span<BatchDraftJob> jobs);
  bool fits(int slot, int n);
  int catch_up_rows(const BatchDraftJob& job) const;
  std::vector<Planned*> catch_up(std::vector<Planned>& planned);
  void draw(std::vector<Planned*>& drafting, std::span<const float> logits);
  void append(int slot, int32_t token, bool logits);

  Context& ctx_;
  int budget_;
  int32_t id_limit_;
  std::vector<std::vector<int32_t>> held_;  // per slot: the tokens its draft cache holds
  std::vector<int> need_;                   // per slot: tokens appended this call (pool checks)
  std::vector<float> scratch_;
  Batch batch_;
  int64_t decoded_ = 0;
};

}  // namespace ember
