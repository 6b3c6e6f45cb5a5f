// One sequence of the scheduler (scheduler.h): its tokens, how far its KV cache holds them,
// its sampler, its text, and the one place that decides when its generation ends: a stop
// token, a stop string (its text held back while it could still become one), max_tokens, a
// full context (unless it shifts) — take() for every sampled token, whatever produced it
// (a plain step, an accepted draft, a bonus token).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/draft/draft_source.h"
#include "engine/scheduler.h"
#include "engine/stop_strings.h"
#include "grammar/token_matcher.h"
#include "sampling/sampler_chain.h"

namespace ember {

// How far a sequence drafts: each drafted token costs a row of the shared batch, accepted or
// not, so the i-th is drafted only while alpha^i >= kWorthRow, alpha being the sequence's
// decayed share of accepted draft positions (prior 0.5). When that is no draft at all, the
// source's guess for the next token (free to make) is checked against the token the
// sequence then emits, so drafting resumes as soon as its output starts copying again.
// It depends on acceptance only, never on timing, so seeded output is reproducible.
class DraftGate {
 public:
  int length(int max) const;
  void record(bool accepted);

 private:
  static constexpr double kWorthRow = 0.5, kDecay = 0.9;
  double hits_ = 1.0, tries_ = 2.0;
};

// What one sampled token did to its sequence.
struct TakenToken {
  bool kept = false;                 // appended to the tokens (false: a stop token)
  std::string text;                  // text that became final with it (may be empty)
  std::optional<FinishReason> end;   // the sequence ends here
};

class Sequence {
 public:
  Sequence(int id, SequenceRequest&& request, int n_ctx, const Tokenizer* tok);

  TakenToken take(int32_t token);
  // At the end of generation: the text still held back (none after a stop string).
  std::string flush_text() { return text_ ? text_->finish() : std::string(); }
  // After a context shift dropped tokens [n_keep, n_keep + n_dropped) of the cache.
  void follow_shift(int n_keep, int n_dropped);
  // The KV cache now holds tokens[0, n): a rollback, or a resumed cache holding that prefix.
  void computed_up_to(int n) { n_computed = n; }

  SamplerChain& sampler() { return *sampler_; }
  bool bans_tokens() const { return !request_banned_.empty(); }
  const std::vector<int32_t>& banned() const { return request_banned_; }
  const std::vector<int32_t>& stop_tokens() const { return stop_; }
  int remaining() const { return static_cast<int>(tokens.size()) - n_computed; }
  bool decoding() const { return n_generated > 0 && remaining() == 1; }
  bool drafting() const { return draft || model_draft; }
  // Cuts drafted tokens at the first one the grammar refuses (each tried on the matcher,
  // which is then rolled back): a draft that leaves the language costs no rows.
  void trim_to_grammar(DraftProposal& p);

  int id;
  int slot = -1;
  std::vector<int32_t> tokens;  // prompt, then generated (after a shift, without the dropped ones)
  int n_computed = 0;           // tokens[0, n_computed) are in the KV cache
  int n_generated = 0;
  int max_tokens;
  int top_logprobs;
  bool shifts;                  // a full context shifts instead of ending the sequence
  uint64_t cache_key;           // park the KV cache under this key at the end (0: no)
  bool resume;                  // start from the parked cache of cache_key
  int reused = 0, shifted = 0;  // tokens found in a parked cache / dropped by shifts
  int prompt_cached = -1;       // tokens already computed when first seated (-1: not seated yet)

  // Drafting.
  std::unique_ptr<DraftSource> draft;  // n-gram lookup (null: none, or a draft model)
  int draft_max, draft_min;
  bool draft_fixed;
  DraftGate gate;
  DraftProposal proposal;              // this step's drafted tokens
  int32_t guess = -1;                  // the source's next token while the gate drafts nothing
  bool model_draft;                    // drafts come from the scheduler's draft model
  bool model_guess = false;            // the gate drafts nothing: the draft model's first token is the guess
  Rng draft_rng;                       // the draft model's own stream for this sequence
  std::optional<SamplerChain> draft_chain;  // this step's: the sampler's settings and window, draft_rng
  std::unique_ptr<grammar::TokenMatcher> matcher;  // constrained decoding (null: none)

 private:
  int n_ctx_;
  std::vector<int32_t> stop_, request_banned_;
  std::optional<SamplerChain> own_sampler_;
  SamplerChain* sampler_;
  std::optional<GeneratedText> text_;
};

}  // namespace ember
