// The scheduler's speculative side (scheduler.h): how far each decoding sequence drafts,
// the draft model's batched run, and the verification of drafts by speculative.h's rule.
#include <algorithm>
#include <optional>

#include "engine/draft/draft_batch.h"
#include "engine/draft/speculative.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "kv/kv_cache.h"

namespace ember {

// Most tokens `s` may draft this step: its own limit, the budget, the verify cap,
// and no more than it may still generate (the step yields up to k + 1 tokens).
int Scheduler::draft_room(const Sequence& s, int budget) const {
  const int n_tokens = static_cast<int>(s.tokens.size());
  int k = std::min({s.draft_max, budget, max_rows_ - 1, ctx_.n_ctx() - n_tokens - 1});
  if (s.max_tokens >= 0) k = std::min(k, s.max_tokens - s.n_generated - 1);
  return std::max(k, 0);
}

// The most of k drafts (after its last token) the pool holds for `s` beside the plan so far;
// sets need_ for it.
int Scheduler::fit_drafts(const Sequence& s, int k) {
  const KVCache& kv = ctx_.kv_cache();
  for (; k > 0; --k) {
    need_[s.slot] = 1 + k;
    if (kv.fits(need_)) break;
  }
  need_[s.slot] = 1 + k;
  return k;
}

// Drafts for the planned decodes, oldest first, in the budget and the pool their plain rows
// leave: a draft is cut to what fits, never a reason to preempt. A draft model's proposals
// come after the whole plan (draft_with_model): here they only reserve their rows.
void Scheduler::plan_drafts(std::vector<Chunk>& decodes, int& budget) {
  for (Chunk& c : decodes) {
    Sequence& s = *c.seq;
    s.guess = -1;
    s.model_guess = false;
    if (!s.drafting()) continue;
    const int room = draft_room(s, budget);
    const int gated = s.gate.length(room);
    const int want = s.draft_fixed ? room : (gated > 0 ? std::min(room, std::max(gated, s.draft_min)) : 0);
    const bool guess = want == 0 && room > 0;  // the gate is shut: only a guess, checked in sample()
    const int k = fit_drafts(s, want);
    if (s.model_draft) {
      s.model_guess = guess;
      c.drafted = k;
      budget -= k;
      continue;
    }
    if (guess) {
      s.draft->propose(s.tokens, 1, ctx_.n_vocab(), s.proposal);
      if (!s.proposal.tokens.empty()) s.guess = s.proposal.tokens[0];
    }
    if (k == 0) continue;
    s.draft->propose(s.tokens, k, ctx_.n_vocab(), s.proposal);
    s.trim_to_grammar(s.proposal);
    c.drafted = static_cast<int>(s.proposal.tokens.size());
    need_[s.slot] = 1 + c.drafted;
    budget -= c.drafted;
  }
}

// The draft model's run for the planned chunks of its sequences: prompt chunks mirrored,
// decodes caught up and drafted for (c.drafted planned, or one guess), then each decode's
// drafts set to what the draft proposed (fewer when it stopped early or lagged behind).
void Scheduler::draft_with_model(std::vector<Chunk>& plan) {
  std::vector<BatchDraftJob> jobs;
  for (const Chunk& c : plan) {
    Sequence& s = *c.seq;
    if (!s.model_draft) continue;
    BatchDraftJob job{.slot = s.slot, .tokens = s.tokens, .goal = s.n_computed + c.n, .eog = s.stop_tokens(),
                      .banned = s.banned()};
    job.k = s.decoding() ? (s.model_guess ? 1 : c.drafted) : 0;
    if (job.k > 0) {
      s.draft_chain.emplace(s.sampler());
      s.draft_chain->rng() = s.draft_rng;
      job.chain = &*s.draft_chain;
      job.out = &s.proposal;
    }
    jobs.push_back(job);
  }
  if (jobs.empty()) return;
  draft_->run(jobs);
  stats_.draft_model_tokens = draft_->decoded_tokens();
  for (Chunk& c : plan) {
    Sequence& s = *c.seq;
    if (!s.model_draft || !s.draft_chain) continue;
    s.draft_rng = s.draft_chain->rng();
    s.draft_chain.reset();
    if (!s.model_guess) s.trim_to_grammar(s.proposal);
    const std::vector<int32_t>& drafted = s.proposal.tokens;
    if (s.model_guess) s.guess = drafted.empty() ? -1 : drafted[0];
    else c.drafted = static_cast<int>(drafted.size());
  }
}

// A decode with k drafts: rows[i] predicts draft i (row 0 follows the sequence's last token,
// row k the bonus token). Emits the accepted drafts, then the token drawn in place of the
// first rejected one, or the bonus token after them all, and gives back the KV of the drafts
// it did not keep, leaving the sequence as plain decoding would. A token that ends the
// sequence ends it there; a cancel from an event stops it at once (plain decoding would emit
// nothing more before the next step retires it).
// The grammar allows no token after the accepted drafts: the cache goes back to the tokens
// and the sequence ends.
void Scheduler::dead_end(Sequence& s) {
  roll_back_to(s, static_cast<int>(s.tokens.size()));
  finish(s, FinishReason::GrammarDeadEnd);
}

void Scheduler::verify(Sequence& s, int k, std::span<const float> raw_rows) {
  const std::span<const float> rows = masked(s, raw_rows);
  const size_t n_vocab = q_dense_.size();
  // Row i under the grammar's mask for the state after drafts 0..i-1, which are accepted
  // (and taken by the matcher) by the time it is read.
  auto row = [&](int i) { return constrained(s, rows.subspan(static_cast<size_t>(i) * n_vocab, n_vocab)); };
  auto raw = [&](int i) { return raw_rows.subspan(static_cast<size_t>(i) * n_vocab, n_vocab); };
  s.n_computed += 1 + k;  // the last token and every draft
  stats_.drafted_tokens += k;
  SamplerChain& sampler = s.sampler();
  int i = 0;
  std::optional<int32_t> next;
  for (; i < k; ++i) {
    const std::span<const float> target = row(i);
    if (target.empty()) return dead_end(s);
    const DraftVerdict v = verify_draft(sampler, target, s.proposal, static_cast<size_t>(i), q_dense_);
    s.gate.record(v.accepted);
    if (!v.accepted) {
      next = v.token;
      break;
    }
    stats_.accepted_tokens += 1;
    sampler.accept(v.token);
    if (!emit(s, v.token, raw(i))) return;  // finished: its cache went back or was parked
    if (cancelled(s.id)) {
      roll_back_to(s, static_cast<int>(s.tokens.size()) - 1);
      return;
    }
  }
  if (!next) {
    const std::span<const float> target = row(k);
    if (target.empty()) return dead_end(s);
    next = sampler.draw(sampler.apply(target));
  }
  sampler.accept(*next);
  roll_back_to(s, static_cast<int>(s.tokens.size()));  // what plain decoding holds before `next`
  emit(s, *next, raw(i));
}

}  // namespace ember
