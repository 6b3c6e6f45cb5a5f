#include "engine/session.h"

#include <chrono>

#include "model/model.h"
#include "sampling/sampler_chain.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/interrupt.h"

namespace ember {

namespace {
using Clock = std::chrono::steady_clock;
double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
// The one conversation a session parks its cache under.
constexpr uint64_t kConversation = 1;

StopReason stop_reason(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return StopReason::EndOfGeneration;
    case FinishReason::Length: return StopReason::TokenLimit;
    case FinishReason::ContextFull: return StopReason::ContextFull;
    case FinishReason::Cancelled: return StopReason::Interrupted;
    case FinishReason::GrammarDeadEnd: return StopReason::GrammarDeadEnd;
  }
  return StopReason::Interrupted;
}
}  // namespace

// One generate() call as the scheduler's events see it.
struct Session::Run {
  GenerationResult result;
  const TextSink* on_text = nullptr;
  Clock::time_point start, first_token;
  int64_t steps_at_first_token = 0;
  bool done = false;
};

Session::Session(Context& ctx, const Tokenizer& tok, SamplerChain& sampler, Context* draft)
    : ctx_(ctx), tok_(tok), sampler_(sampler), draft_(draft) {
  restart();
}

// A fresh scheduler: the old one (if any) gives back every slot and cache it held.
void Session::restart() {
  sched_.reset();
  sched_ = std::make_unique<Scheduler>(
      ctx_, SchedulerOptions{.max_sequences = 1, .batch_tokens = 0, .draft = draft_, .tokenizer = &tok_}, events());
}

Session::~Session() = default;

int Session::n_ctx() const { return ctx_.n_ctx(); }

void Session::check_prompt_fits(size_t n_tokens) const { ember::check_prompt_fits(n_tokens, ctx_.n_ctx()); }

std::span<const int32_t> Session::cached_tokens() const { return sched_->parked_tokens(kConversation); }

void Session::clear() { sched_->drop_parked(kConversation); }

Scheduler::Events Session::events() {
  Scheduler::Events e;
  e.on_token = [this](int, int32_t token) {
    Run& run = *run_;
    if (run.result.tokens.empty()) {
      run.first_token = Clock::now();
      run.steps_at_first_token = sched_->stats().steps;
    }
    run.result.tokens.push_back(token);
  };
  e.on_text = [this](int, std::string_view piece) {
    if (piece.empty()) return;
    run_->result.text += piece;
    if (*run_->on_text) (*run_->on_text)(piece);
  };
  e.on_finish = [this](int, const SequenceEnd& end) { finish(*run_, end); };
  return e;
}

SequenceRequest Session::request(std::span<const int32_t> prompt, const GenerateOptions& options) const {
  SequenceRequest r;
  r.prompt.assign(prompt.begin(), prompt.end());
  r.sampler = &sampler_;
  r.max_tokens = options.max_tokens;
  (options.ignore_eos ? r.banned_tokens : r.stop_tokens) = tok_.eog_ids();
  r.stop_strings = options.stop_strings;
  r.draft = options.draft;
  r.grammar = options.grammar;
  r.may_fill_context = true;
  r.cache_key = kConversation;
  r.resume = true;
  return r;
}

void Session::finish(Run& run, const SequenceEnd& end) const {
  GenerationStats& s = run.result.stats;
  const Clock::time_point now = Clock::now();
  const bool generated = !run.result.tokens.empty();
  s.reused_tokens = end.reused_tokens;
  s.prompt_ms = ms_between(run.start, generated ? run.first_token : now);
  s.ttft_ms = generated ? s.prompt_ms : 0.0;
  s.generated_tokens = static_cast<int>(run.result.tokens.size());
  s.generation_ms = generated ? ms_between(run.first_token, now) : 0.0;
  s.context_used = end.cached_tokens;
  s.shifted_tokens = end.shifted_tokens;
  s.stop = stop_reason(end.reason);
  run.done = true;
}

GenerationResult Session::generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                   const TextSink& on_text) {
  if (prompt.empty()) fail(ErrorKind::InvalidArgument, "the prompt is empty (no tokens to start from)");
  Run run;
  run.on_text = &on_text;
  run.start = Clock::now();
  run.result.stats.n_ctx = ctx_.n_ctx();
  run.result.stats.prompt_tokens = static_cast<int>(prompt.size());
  const SchedulerStats before = sched_->stats();
  run_ = &run;
  try {
    const int id = sched_->submit(request(prompt, options));
    while (!run.done) {
      if (interrupt_requested()) sched_->cancel(id);
      sched_->step();
    }
  } catch (...) {  // a failed step leaves nothing behind: the next generation starts afresh
    run_ = nullptr;
    restart();
    throw;
  }
  run_ = nullptr;
  const SchedulerStats& after = sched_->stats();
  DraftTally& t = run.result.draft;
  t.target_passes = run.result.tokens.empty() ? 0 : after.steps - run.steps_at_first_token;
  t.drafted = after.drafted_tokens - before.drafted_tokens;
  t.accepted = after.accepted_tokens - before.accepted_tokens;
  t.draft_rows = after.draft_model_tokens - before.draft_model_tokens;
  return std::move(run.result);
}

}  // namespace ember
