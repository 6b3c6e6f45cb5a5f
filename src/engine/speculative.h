// Speculative decoding: a draft source proposes k tokens, the target verifies them all, plus
// one more position, in ONE batched decode, and keeps the longest accepted prefix.
//
// Exactness (Leviathan et al. 2023, Chen et al. 2023): p_i and q_i are the target's and the
// draft's distributions after the same sampler transforms. Drafted x_i ~ q_i is accepted with
// probability min(1, p_i(x_i) / q_i(x_i)); on the first rejection the token is drawn from
// normalise(max(0, p_i - q_i)) and the round ends; when all k are accepted a bonus token is
// drawn from p_k. Every emitted token is then distributed exactly as under plain sampling
// from p. Both KV caches roll back past the first rejection.
//
// Greedy (temperature <= 0): p_i and q_i are one-hot, so the rule accepts x_i iff it is the
// target's argmax and otherwise emits that argmax: the output equals plain greedy decoding
// token for token PROVIDED the verify pass computes the same logits as single-token steps.
// ember's CPU kernels guarantee that: every output element of matmul, norm, rope and
// attention is the same sequence of float operations whatever the number of rows in the
// batch (tiling changes which rows share a loaded weight, not the order of the sums), and
// masked keys contribute exact zeros. The one exception is attention splitting a batch into
// several query tiles (more than 32 / (query heads per KV head) rows), which changes how the
// key ring is split over threads; the verify batch is capped below that (max_verify_rows),
// and tests/test_speculative.cpp checks batch-vs-single logits bit for bit.
//
// Sampling (temperature > 0) with a fixed seed is reproducible, but draws a different random
// stream than plain decoding: the same distribution, not the same tokens.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/draft_length.h"
#include "engine/draft_source.h"
#include "engine/session.h"

namespace ember {

class Context;
class Tokenizer;
class SamplerChain;

struct SpeculativeStats {
  int rounds = 0;          // target passes after the prompt (plain steps included)
  int draft_rounds = 0;    // of those, with at least one drafted token
  int drafted = 0;         // tokens proposed
  int accepted = 0;        // of those, accepted
  double draft_ms = 0;     // time in the draft source
  double verify_ms = 0;    // time in target passes
  int off_rounds = 0;      // rounds where the controller had drafting switched off

  double acceptance_rate() const { return drafted ? static_cast<double>(accepted) / drafted : 0.0; }
  double mean_accepted() const { return draft_rounds ? static_cast<double>(accepted) / draft_rounds : 0.0; }
  // Generated tokens per target pass (1.0 = plain decoding).
  double tokens_per_pass(int generated) const { return rounds ? static_cast<double>(generated) / rounds : 0.0; }
};

struct SpeculativeResult {
  GenerationResult generation;
  SpeculativeStats spec;
};

// Most rows a verify pass may have so that its logits are bitwise those of single steps
// (see above): 32 / (query heads per KV head), at least 1.
int max_verify_rows(const Context& target);

// `options` with costly_source set from the source (probing a draft model costs a catch-up).
DraftLengthOptions with_source(DraftLengthOptions options, const DraftSource& source);

class SpeculativeDecoder {
 public:
  SpeculativeDecoder(Context& target, const Tokenizer& tok, SamplerChain& sampler, DraftSource& draft,
                     const DraftLengthOptions& length);

  // As Session::generate (same prompt-prefix reuse, stop rules, streamed text and final
  // cache contents), with speculative rounds in between.
  SpeculativeResult generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                             const Generator::TextSink& on_text);

  const std::vector<int32_t>& cached_tokens() const { return cached_; }
  // Empties the target's KV cache (a draft model's cache follows by itself: it keeps the
  // longest prefix it shares with the next context).
  void clear();
  // As a new decoder: empty caches (the draft's too) and a fresh cost model.
  void restart();
  const DraftLength& draft_length() const { return length_; }

 private:
  bool prefill(std::span<const int32_t> tokens, GenerationStats& stats);
  void follow_shift(GenerationStats& stats);
  std::span<const float> row(size_t i) const;  // logits row i of the last pass (masked)

  Context& ctx_;
  const Tokenizer& tok_;
  SamplerChain& sampler_;
  DraftSource& draft_;
  DraftLengthOptions length_options_;
  DraftLength length_;
  std::vector<int32_t> cached_;     // what the target's KV cache holds
  std::vector<float> logits_;       // rows of the last pass, banned tokens masked
  size_t n_vocab_ = 0;
};

// The rejection rule for one drafted token, exposed for tests: accept x with probability
// min(1, p(x)/q(x)) using uniform u in [0, 1). q_x = 1 for deterministic drafts.
inline bool accept_draft(double p_x, double q_x, double u) { return u * q_x < p_x; }

// The verdict on one drafted token x = proposal.tokens[i], from the target's logits row that
// predicts it, by the rule above: accepted (token = x), or rejected with the token drawn in
// its place from the residual (the round ends there). Draws from sampler.rng() and does not
// accept() anything into the chain: the caller does, for the token it emits. q_dense:
// n_vocab zeros, scratch that is left zeroed. Shared by SpeculativeDecoder and the
// continuous-batching scheduler (scheduler.h), so both keep the same exact rule.
struct DraftVerdict {
  bool accepted = false;
  int32_t token = 0;
};
DraftVerdict verify_draft(SamplerChain& sampler, std::span<const float> logits, const DraftProposal& proposal, size_t i,
                          std::span<float> q_dense);

// normalise(max(0, p - q)) as candidates (p's order). q_dense[id] = q(id) (size >= every id
// of p, zeros elsewhere). Falls back to p when the residual has no mass (p == q up to
// rounding: then a rejection is a measure-zero event).
Candidates residual_distribution(const Candidates& p, std::span<const float> q_dense);

}  // namespace ember
