#include "engine/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>

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
}  // namespace

Session::Session(Context& ctx, const Tokenizer& tok, SamplerChain& sampler)
    : ctx_(ctx), tok_(tok), sampler_(sampler) {}

int Session::n_ctx() const { return ctx_.n_ctx(); }

void Session::check_prompt_fits(size_t n_tokens) const {
  if (n_tokens > static_cast<size_t>(ctx_.n_ctx()))
    fail(ErrorKind::ContextFull, "the prompt is {} tokens but the context holds only {} (raise -c)", n_tokens,
         ctx_.n_ctx());
}

void Session::clear() {
  ctx_.kv_clear(0);
  cached_.clear();
}

void Session::follow_shift(GenerationStats& stats) { follow_context_shift(ctx_, cached_, stats); }

bool Session::prefill(std::span<const int32_t> tokens, GenerationStats& stats) {
  return prefill_cached(ctx_, tokens, cached_, last_logits_, stats);
}

void Session::decode_one(int32_t token, GenerationStats& stats) {
  Batch batch;
  batch.add(token, -1, 0, true);
  const std::span<const float> logits = ctx_.decode(batch);
  cached_.push_back(token);
  follow_shift(stats);
  last_logits_.assign(logits.begin(), logits.end());
}

GenerationResult Session::generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                   const TextSink& on_text) {
  GenerationResult result;
  GenerationStats& stats = result.stats;
  stats.n_ctx = ctx_.n_ctx();
  stats.prompt_tokens = static_cast<int>(prompt.size());
  if (prompt.empty()) fail(ErrorKind::InvalidArgument, "the prompt is empty (no tokens to start from)");
  check_prompt_fits(prompt.size());
  const auto start = Clock::now();

  // Reuse the cached prefix; at least the last prompt token is decoded again for its logits.
  const size_t common = reuse_cached_prefix(ctx_, prompt, cached_);
  stats.reused_tokens = static_cast<int>(common);

  const bool complete = prefill(prompt.subspan(common), stats);
  stats.prompt_ms = ms_since(start);
  const auto generation_start = Clock::now();
  auto finish = [&](StopReason reason) {
    stats.stop = reason;
    stats.generation_ms = result.tokens.empty() ? 0.0 : ms_since(generation_start);
    stats.context_used = static_cast<int>(cached_.size());
    return result;
  };
  if (!complete) return finish(StopReason::Interrupted);
  if (options.max_tokens == 0) return finish(StopReason::TokenLimit);  // -n 0: evaluate the prompt only

  // The penalty window sees the context as it is now (prompt tokens included, as llama.cpp).
  sampler_.reset_history();
  for (int32_t t : cached_) sampler_.accept(t);

  StreamingDecoder decoder(tok_, StreamingDecoder::LeadingSpace::Keep);
  auto emit = [&](const std::string& piece) {
    if (piece.empty()) return;
    result.text += piece;
    if (on_text) on_text(piece);
  };
  const bool can_shift = ctx_.options().policy == ContextPolicy::Shift;
  for (;;) {
    if (options.ignore_eos)
      for (int32_t id : tok_.eog_ids())
        if (static_cast<size_t>(id) < last_logits_.size()) last_logits_[static_cast<size_t>(id)] = -INFINITY;
    const int32_t token = sampler_.sample(last_logits_);
    if (result.tokens.empty()) stats.ttft_ms = ms_since(start);
    if (tok_.is_eog(token)) {
      emit(decoder.flush());
      return finish(StopReason::EndOfGeneration);
    }
    result.tokens.push_back(token);
    ++stats.generated_tokens;
    emit(decoder.push(token));
    StopReason reason;
    bool stop = true;
    if (options.max_tokens >= 0 && stats.generated_tokens >= options.max_tokens) reason = StopReason::TokenLimit;
    else if (interrupt_requested()) reason = StopReason::Interrupted;
    else if (!can_shift && cached_.size() >= static_cast<size_t>(ctx_.n_ctx())) reason = StopReason::ContextFull;
    else stop = false;
    if (stop) {
      emit(decoder.flush());
      return finish(reason);
    }
    decode_one(token, stats);
  }
}

}  // namespace ember
