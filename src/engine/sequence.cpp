#include "engine/sequence.h"

#include <algorithm>

#include "engine/draft/draft_draw.h"
#include "engine/draft/ngram_draft.h"
#include "util/error.h"

namespace ember {

int DraftGate::length(int max) const {
  const double alpha = hits_ / tries_;
  int k = 0;
  for (double p = alpha; k < max && p >= kWorthRow; p *= alpha) ++k;
  return k;
}

void DraftGate::record(bool accepted) {
  hits_ = kDecay * hits_ + (accepted ? 1.0 : 0.0);
  tries_ = kDecay * tries_ + 1.0;
}

namespace {
// The request's own chain, or the caller's (whose random stream goes on across requests).
SamplerChain* chain_for(SequenceRequest& r, std::optional<SamplerChain>& own, int n_ctx) {
  if (r.sampler) return r.sampler;
  own.emplace(r.sampling, n_ctx);
  return &*own;
}
}  // namespace

Sequence::Sequence(int id_, SequenceRequest&& r, int n_ctx, const Tokenizer* tok)
    : id(id_),
      tokens(std::move(r.prompt)),
      max_tokens(r.max_tokens),
      top_logprobs(r.top_logprobs),
      shifts(r.context_shift),
      cache_key(r.cache_key),
      resume(r.resume),
      draft_max(r.draft.max),
      draft_min(r.draft.min),
      draft_fixed(r.draft.fixed),
      model_draft(r.draft.model),
      n_ctx_(n_ctx),
      stop_(std::move(r.stop_tokens)),
      request_banned_(std::move(r.banned_tokens)),
      sampler_(chain_for(r, own_sampler_, n_ctx)) {
  // The penalty window sees the prompt (llama.cpp does the same).
  sampler_->reset_history();
  for (int32_t t : tokens) sampler_->accept(t);
  // The draft model's own random stream. A caller's chain goes on across requests, and so
  // must the draft's (a stream restarted at every request would propose the same tokens for
  // the same context each time, which the rejection rule cannot correct across requests):
  // it is seeded from the chain's stream instead of its seed.
  const bool borrowed = r.sampler != nullptr;
  draft_rng = draft_stream(borrowed && r.draft.model ? sampler_->rng().next_u64() : sampler_->seed());
  if (r.draft.ngram > 0) draft = std::make_unique<NgramDraft>(r.draft.ngram);
  if (r.grammar) matcher = std::make_unique<grammar::TokenMatcher>(std::move(r.grammar));
  if (tok) text_.emplace(*tok, std::move(r.stop_strings), r.render_special);
}

TakenToken Sequence::take(int32_t token) {
  TakenToken out;
  if (std::find(stop_.begin(), stop_.end(), token) != stop_.end()) {
    out.end = FinishReason::Stop;
    return out;
  }
  // The sampler drew from the grammar's mask, and drafts were checked against it.
  if (matcher && !matcher->accept(token)) fail(ErrorKind::Internal, "token {} is outside the grammar", token);
  out.kept = true;
  tokens.push_back(token);
  n_generated += 1;
  if (text_) out.text = text_->push(token);
  // The KV cache must hold every token but this last one for another step.
  const bool context_full = !shifts && tokens.size() > static_cast<size_t>(n_ctx_);
  if (text_ && text_->stopped()) out.end = FinishReason::Stop;
  else if (matcher && matcher->finished()) out.end = FinishReason::Stop;  // nothing may follow
  else if (max_tokens >= 0 && n_generated >= max_tokens) out.end = FinishReason::Length;
  else if (context_full) out.end = FinishReason::ContextFull;
  return out;
}

void Sequence::trim_to_grammar(DraftProposal& p) {
  if (!matcher) return;
  size_t kept = 0, taken = 0;
  for (; kept < p.tokens.size(); ++kept) {
    const int32_t t = p.tokens[kept];
    if (std::find(stop_.begin(), stop_.end(), t) != stop_.end()) {  // ends the output here
      if (matcher->can_end()) ++kept;
      break;
    }
    bool ok = false;
    try {
      ok = matcher->accept(t);
    } catch (const Error&) {  // past the grammar's bounds: the mask will end the sequence
    }
    if (!ok) break;
    ++taken;
  }
  matcher->rollback(taken);
  p.tokens.resize(kept);
  if (p.q.size() > kept) p.q.resize(kept);
}

void Sequence::follow_shift(int n_keep, int n_dropped) {
  tokens.erase(tokens.begin() + n_keep, tokens.begin() + n_keep + n_dropped);
  n_computed -= n_dropped;
  shifted += n_dropped;
}

}  // namespace ember
