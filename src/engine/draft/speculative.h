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
// masked keys contribute exact zeros. Attention walks the keys in fixed splits folded in
// order, so a row's bits do not depend on how many query tiles the call has either.
// tests/test_speculative.cpp checks batch-vs-single logits bit for bit at the verify cap
// (kMaxVerifyRows), and the attention tests prefill chunks of any length.
//
// Sampling (temperature > 0) with a fixed seed is reproducible, but draws a different random
// stream than plain decoding: the same distribution, not the same tokens.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "engine/draft/draft_source.h"

namespace ember {

class SamplerChain;

// Most rows (the last token and its drafts) one sequence's verify pass may take. Exactness
// does not need a cap (see above); this bounds the work a rejected draft can waste, and is
// above any useful --draft-max.
constexpr int kMaxVerifyRows = 32;

// The rejection rule for one drafted token, exposed for tests: accept x with probability
// min(1, p(x)/q(x)) using uniform u in [0, 1). q_x = 1 for deterministic drafts.
inline bool accept_draft(double p_x, double q_x, double u) { return u * q_x < p_x; }

// The verdict on one drafted token x = proposal.tokens[i], from the target's logits row that
// predicts it, by the rule above: accepted (token = x), or rejected with the token drawn in
// its place from the residual (the round ends there). Draws from sampler.rng() and does not
// accept() anything into the chain: the caller does, for the token it emits. q_dense:
// n_vocab zeros, scratch that is left zeroed. The scheduler (scheduler.h) verifies every
// draft with it.
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
