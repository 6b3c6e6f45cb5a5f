#include "engine/speculative.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "engine/cached_tokens.h"
#include "model/model.h"
#include "sampling/sampler_chain.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/interrupt.h"

namespace ember {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// attention.cpp's query tile: kQueryRows (32) rows of tokens x query heads per KV head.
constexpr int kAttentionQueryRows = 32;

// EMBER_SPEC_TRACE=1: one stderr line per round (what was drafted, accepted, what it cost and
// the controller's estimates), for studying the cost model on a given machine and model.
bool trace_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("EMBER_SPEC_TRACE");
    return v && *v && *v != '0';
  }();
  return on;
}
}  // namespace

namespace {
// The controller only considers lengths a verify pass can take (max_verify_rows - 1).
DraftLengthOptions capped(DraftLengthOptions options, int verify_rows) {
  options.max = std::max(1, std::min(options.max, verify_rows - 1));
  options.min = std::min(options.min, options.max);
  return options;
}
}  // namespace

DraftLengthOptions with_source(DraftLengthOptions options, const DraftSource& source) {
  options.costly_source = source.costly();
  return options;
}

int max_verify_rows(const Context& target) {
  const Hparams& hp = target.model().hparams();
  const int group = hp.n_head_kv > 0 ? hp.n_head / hp.n_head_kv : 1;
  return std::max(1, kAttentionQueryRows / std::max(1, group));
}

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

SpeculativeDecoder::SpeculativeDecoder(Context& target, const Tokenizer& tok, SamplerChain& sampler,
                                       DraftSource& draft, const DraftLengthOptions& length)
    : ctx_(target),
      tok_(tok),
      sampler_(sampler),
      draft_(draft),
      length_options_(capped(with_source(length, draft), max_verify_rows(target))),
      length_(length_options_) {
  n_vocab_ = static_cast<size_t>(ctx_.n_vocab());
}

std::span<const float> SpeculativeDecoder::row(size_t i) const {
  return std::span<const float>(logits_).subspan(i * n_vocab_, n_vocab_);
}

void SpeculativeDecoder::clear() {
  ctx_.kv_clear(0);
  cached_.clear();
}

void SpeculativeDecoder::restart() {
  clear();
  draft_.reset();
  length_ = DraftLength(length_options_);
}

void SpeculativeDecoder::follow_shift(GenerationStats& stats) { follow_context_shift(ctx_, cached_, stats); }

bool SpeculativeDecoder::prefill(std::span<const int32_t> tokens, GenerationStats& stats) {
  return prefill_cached(ctx_, tokens, cached_, logits_, stats);
}

SpeculativeResult SpeculativeDecoder::generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                               const Generator::TextSink& on_text) {
  SpeculativeResult out;
  GenerationResult& result = out.generation;
  GenerationStats& stats = result.stats;
  SpeculativeStats& spec = out.spec;
  stats.n_ctx = ctx_.n_ctx();
  stats.prompt_tokens = static_cast<int>(prompt.size());
  if (prompt.empty()) fail(ErrorKind::InvalidArgument, "the prompt is empty (no tokens to start from)");
  if (prompt.size() > static_cast<size_t>(ctx_.n_ctx()))
    fail(ErrorKind::ContextFull, "the prompt is {} tokens but the context holds only {} (raise -c)", prompt.size(),
         ctx_.n_ctx());
  const auto start = Clock::now();

  // Reuse the cached prefix; at least the last prompt token is decoded again for its logits.
  const size_t common = reuse_cached_prefix(ctx_, prompt, cached_);
  stats.reused_tokens = static_cast<int>(common);
  const bool complete = prefill(prompt.subspan(common), stats);
  if (complete && options.max_tokens != 0) draft_.prepare(cached_);
  stats.prompt_ms = ms_since(start);
  const auto generation_start = Clock::now();
  auto finish = [&](StopReason reason) {
    stats.stop = reason;
    stats.generation_ms = result.tokens.empty() ? 0.0 : ms_since(generation_start);
    stats.context_used = static_cast<int>(cached_.size());
    return out;
  };
  if (!complete) return finish(StopReason::Interrupted);
  if (options.max_tokens == 0) return finish(StopReason::TokenLimit);  // -n 0: evaluate the prompt only

  sampler_.reset_history();
  for (int32_t t : cached_) sampler_.accept(t);
  auto mask_rows = [&](size_t n_rows) {
    if (!options.ignore_eos) return;
    for (size_t r = 0; r < n_rows; ++r)
      for (int32_t id : tok_.eog_ids())
        if (static_cast<size_t>(id) < n_vocab_) logits_[r * n_vocab_ + static_cast<size_t>(id)] = -INFINITY;
  };
  mask_rows(1);

  StreamingDecoder decoder(tok_, StreamingDecoder::LeadingSpace::Keep);
  auto emit = [&](const std::string& piece) {
    if (piece.empty()) return;
    result.text += piece;
    if (on_text) on_text(piece);
  };
  const bool can_shift = ctx_.options().policy == ContextPolicy::Shift;
  const int n_ctx = ctx_.n_ctx();
  // Emits one token as plain decoding would, `in_cache` being the tokens plain decoding holds
  // in its cache at that moment; returns why to stop, if it must.
  auto take = [&](int32_t token, size_t in_cache) -> std::optional<StopReason> {
    if (result.tokens.empty()) stats.ttft_ms = ms_since(start);
    if (tok_.is_eog(token)) {
      emit(decoder.flush());
      return StopReason::EndOfGeneration;
    }
    result.tokens.push_back(token);
    ++stats.generated_tokens;
    emit(decoder.push(token));
    std::optional<StopReason> reason;
    if (options.max_tokens >= 0 && stats.generated_tokens >= options.max_tokens) reason = StopReason::TokenLimit;
    else if (interrupt_requested()) reason = StopReason::Interrupted;
    else if (!can_shift && in_cache >= static_cast<size_t>(n_ctx)) reason = StopReason::ContextFull;
    if (reason) emit(decoder.flush());
    return reason;
  };

  const int32_t id_limit = static_cast<int32_t>(std::min<size_t>(n_vocab_, static_cast<size_t>(tok_.n_vocab())));
  const int verify_cap = max_verify_rows(ctx_);
  std::vector<int32_t> context;
  std::vector<float> q_dense(n_vocab_, 0.0f);
  DraftProposal proposal;
  Batch batch;
  // A free source (n-gram lookup) keeps proposing while the controller has drafting off: the
  // "shadow" proposal is compared with the tokens the target then emits, which is what
  // verification would have decided (greedy: exactly; sampling: with the same probability
  // p(x) for a deterministic draft). The acceptance estimate thus stays current at no cost,
  // and drafting switches back on as soon as the output starts copying.
  const bool shadow_checks = !draft_.costly() && length_options_.adaptive;
  const int shadow_max = std::min(length_options_.max, verify_cap - 1);
  DraftProposal shadow;
  size_t shadow_pos = 0;

  int32_t pending = sampler_.sample(row(0));
  std::optional<StopReason> stop = take(pending, cached_.size());
  while (!stop) {
    // Draft length for this round: the controller's choice, within the token budget, the
    // context and the batch-invariant verify size.
    int k = length_.next();
    if (k == 0 && length_.off()) ++spec.off_rounds;
    if (options.max_tokens >= 0) k = std::min(k, options.max_tokens - stats.generated_tokens - 1);
    k = std::min({k, n_ctx - static_cast<int>(cached_.size()) - 1, verify_cap - 1});
    k = std::max(k, 0);

    proposal.clear();
    double last_draft_ms = 0;
    if (k > 0) {
      shadow.clear();
      context.assign(cached_.begin(), cached_.end());
      context.push_back(pending);
      const auto t0 = Clock::now();
      draft_.propose(context, k, id_limit, proposal);
      const double ms = ms_since(t0);
      last_draft_ms = ms;
      spec.draft_ms += ms;
      // A long catch-up (the first round after drafting was off) is not what drafting costs.
      if (proposal.caught_up <= k + 2) length_.record_draft(static_cast<int>(proposal.tokens.size()), ms);
    }
    if (k == 0 && shadow_checks && shadow.tokens.empty() && shadow_max > 0) {
      context.assign(cached_.begin(), cached_.end());
      context.push_back(pending);
      draft_.propose(context, shadow_max, id_limit, shadow);
      shadow_pos = 0;
    }
    const size_t n_draft = proposal.tokens.size();

    batch.clear();
    batch.add(pending, -1, 0, true);
    for (int32_t t : proposal.tokens) batch.add(t, -1, 0, true);
    const auto t0 = Clock::now();
    const std::span<const float> logits = ctx_.decode(batch);
    const double pass_ms = ms_since(t0);
    spec.verify_ms += pass_ms;
    length_.record_pass(static_cast<int>(batch.size()), pass_ms);
    logits_.assign(logits.begin(), logits.end());
    mask_rows(n_draft + 1);
    const size_t base = cached_.size();  // tokens before `pending`
    cached_.push_back(pending);
    cached_.insert(cached_.end(), proposal.tokens.begin(), proposal.tokens.end());
    follow_shift(stats);  // only plain steps can shift: drafts are capped to the free context
    ++spec.rounds;
    if (n_draft > 0) {
      ++spec.draft_rounds;
      spec.drafted += static_cast<int>(n_draft);
    }

    // Verify drafts in order; the first rejection ends the round.
    size_t accepted = 0;
    std::optional<int32_t> next;
    for (size_t i = 0; i < n_draft && !stop; ++i) {
      const DraftVerdict verdict = verify_draft(sampler_, row(i), proposal, i, q_dense);
      if (!verdict.accepted) {
        next = verdict.token;
        break;
      }
      ++accepted;
      sampler_.accept(verdict.token);
      stop = take(verdict.token, base + 1 + i);
      if (stop) {
        // Plain decoding would hold everything before x: forget x and what follows.
        ctx_.kv_rollback(0, static_cast<int>(n_draft - i));
        cached_.resize(base + 1 + i);
      }
    }
    spec.accepted += static_cast<int>(accepted);
    length_.record_verdict(static_cast<int>(n_draft), static_cast<int>(accepted));
    if (trace_enabled())
      std::fprintf(stderr, "spec: k %d drafted %zu accepted %zu pass(%zu) %.2f ms draft %.2f ms | plain %.2f ms alpha %.2f%s\n",
                   k, n_draft, accepted, n_draft + 1, pass_ms, last_draft_ms, length_.plain_ms(), length_.acceptance(),
                   length_.off() ? " off" : "");
    if (stop) break;
    if (accepted < n_draft) {
      ctx_.kv_rollback(0, static_cast<int>(n_draft - accepted));
      cached_.resize(base + 1 + accepted);
    } else {
      next = sampler_.draw(sampler_.apply(row(n_draft)));  // bonus token from p_k
    }
    if (n_draft == 0 && !shadow.tokens.empty()) {  // a plain step: check the shadow proposal
      const bool match = shadow.tokens[shadow_pos] == *next;
      if (match) ++shadow_pos;
      if (!match || shadow_pos == shadow.tokens.size()) {
        length_.record_verdict(static_cast<int>(shadow.tokens.size()), static_cast<int>(shadow_pos));
        shadow.clear();
      }
    }
    sampler_.accept(*next);
    pending = *next;
    stop = take(pending, cached_.size());
  }
  return finish(*stop);
}

}  // namespace ember
