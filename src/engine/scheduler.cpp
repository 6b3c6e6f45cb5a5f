#include "engine/scheduler.h"

#include <algorithm>

#include "engine/draft/draft_batch.h"
#include "engine/draft/speculative.h"
#include "engine/sequence.h"
#include "sampling/log_softmax.h"
#include "kv/kv_cache.h"
#include "util/error.h"

namespace ember {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length:
    case FinishReason::ContextFull: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::GrammarDeadEnd: return "grammar";
  }
  return "?";
}

Scheduler::Scheduler(Context& ctx, const SchedulerOptions& options, Events events)
    : ctx_(ctx), opts_(options), events_(std::move(events)) {
  const int n_seq = ctx.options().n_seq;
  if (opts_.max_sequences <= 0) opts_.max_sequences = n_seq;
  if (opts_.max_sequences > n_seq)
    fail(ErrorKind::InvalidArgument, "{} parallel sequences need a context of as many sequences, it has {}",
         opts_.max_sequences, n_seq);
  if (opts_.batch_tokens <= 0) opts_.batch_tokens = ctx.options().n_batch;
  opts_.batch_tokens = std::min(opts_.batch_tokens, ctx.options().n_batch);
  for (int s = n_seq - 1; s >= 0; --s) free_slots_.push_back(s);
  need_.assign(n_seq, 0);
  q_dense_.assign(static_cast<size_t>(ctx.n_vocab()), 0.0f);
  // A sequence's rows stay within the verify cap, and its rollback within what
  // sliding-window layers keep behind them (one ubatch).
  max_rows_ = std::min(kMaxVerifyRows, ctx.options().n_ubatch);
  const KVCache& kv = ctx.kv_cache();
  limits_ = SchedulerLimits{ctx.n_ctx(), kv.global_stats().total, kv.block_size(), opts_.draft != nullptr,
                            ctx.options().policy == ContextPolicy::Shift};
  if (opts_.draft) {
    if (opts_.draft->options().n_seq < n_seq)
      fail(ErrorKind::InvalidArgument, "the draft model's context has {} sequences, the target's {}",
           opts_.draft->options().n_seq, n_seq);
    draft_ = std::make_unique<BatchDraft>(*opts_.draft, opts_.batch_tokens, ctx.n_vocab());
  }
}

Scheduler::~Scheduler() {
  for (const auto& s : running_) clear_slot(s->slot);
  for (const ParkedCache& p : parked_) clear_slot(p.slot);
}

void check_prompt_fits(size_t n_tokens, int n_ctx) {
  if (n_tokens > static_cast<size_t>(n_ctx))
    fail(ErrorKind::ContextFull, "the prompt is {} tokens but the context holds only {} (raise -c)", n_tokens, n_ctx);
}

void check_request(const SequenceRequest& request, const SchedulerLimits& limits) {
  if (request.prompt.empty()) fail(ErrorKind::InvalidArgument, "empty prompt");
  const size_t n_ctx = static_cast<size_t>(limits.n_ctx);
  const size_t n_prompt = request.prompt.size();
  size_t longest = n_prompt + static_cast<size_t>(std::max(1, request.max_tokens));
  if (request.may_fill_context || request.context_shift || limits.context_shift) {
    check_prompt_fits(n_prompt, limits.n_ctx);
    longest = std::min(request.max_tokens < 0 ? n_ctx : longest, n_ctx);
  } else if (n_prompt >= n_ctx || (request.max_tokens > 0 && longest > n_ctx)) {
    fail(ErrorKind::ContextFull, "prompt of {} tokens + max_tokens {} exceed the context of {}", n_prompt,
         request.max_tokens, n_ctx);
  }
  const size_t blocks = (longest + limits.block_size - 1) / limits.block_size;
  if (limits.pool_blocks > 0 && blocks > static_cast<size_t>(limits.pool_blocks))
    fail(ErrorKind::OutOfMemory, "a request of {} tokens needs {} KV blocks of {} tokens, the pool has {}", longest,
         blocks, limits.block_size, limits.pool_blocks);
  validate(request.sampling);
  const SequenceDrafting& d = request.draft;
  if (d.ngram < 0 || (d.ngram > 0 && d.max < 1))
    fail(ErrorKind::InvalidArgument, "drafting with n-grams up to {} and {} tokens at most: both must be at least 1",
         d.ngram, d.max);
  if (d.model && (d.ngram > 0 || d.max < 1 || !limits.draft_model))
    fail(ErrorKind::InvalidArgument, "drafting with a draft model{}: {} tokens at most, n-grams {}",
         limits.draft_model ? "" : " that the scheduler does not have", d.max, d.ngram);
}

int Scheduler::submit(SequenceRequest request) {
  check_request(request, limits_);
  request.context_shift = request.context_shift || limits_.context_shift;
  stats_.prompt_tokens += static_cast<int64_t>(request.prompt.size());
  waiting_.push_back(std::make_unique<Sequence>(next_id_, std::move(request), ctx_.n_ctx(), opts_.tokenizer));
  return next_id_++;
}

void Scheduler::cancel(int id) { cancelled_.push_back(id); }

bool Scheduler::cancelled(int id) const {
  return std::find(cancelled_.begin(), cancelled_.end(), id) != cancelled_.end();
}

void Scheduler::clear_slot(int slot) {
  ctx_.kv_clear(slot);
  if (draft_) draft_->clear(slot);
}

// Gives the sequence's slot and its blocks back, the draft model's too (published full
// blocks stay in the prefix caches).
void Scheduler::release(Sequence& s) {
  clear_slot(s.slot);
  free_slots_.push_back(s.slot);
  s.slot = -1;
}

void Scheduler::finish(Sequence& s, FinishReason reason) {
  const std::string held_back = s.flush_text();
  if (!held_back.empty() && events_.on_text) events_.on_text(s.id, held_back);
  const SequenceEnd end{reason, s.reused, s.shifted, s.slot >= 0 ? std::min<int>(s.n_computed, s.tokens.size()) : 0,
                        std::max(s.prompt_cached, 0)};
  if (s.slot >= 0) {
    if (s.cache_key != 0) park(s);
    else release(s);
  }
  if (events_.on_finish) events_.on_finish(s.id, end);
}

void Scheduler::retire_cancelled() {
  for (int id : cancelled_) {
    auto matches = [&](const std::unique_ptr<Sequence>& s) { return s->id == id; };
    if (auto it = std::find_if(waiting_.begin(), waiting_.end(), matches); it != waiting_.end()) {
      finish(**it, FinishReason::Cancelled);
      waiting_.erase(it);
    } else if (auto jt = std::find_if(running_.begin(), running_.end(), matches); jt != running_.end()) {
      finish(**jt, FinishReason::Cancelled);
      running_.erase(jt);
    }
  }
  cancelled_.clear();
}

// Gives `s` a slot: its parked cache when it resumes one (the common prefix kept), else a
// free one with what the prefix cache holds of its tokens.
void Scheduler::seat(Sequence& s) {
  if (s.resume && take_parked(s)) {
    if (s.prompt_cached < 0) s.prompt_cached = s.reused;
    return;
  }
  s.slot = free_slots_.back();
  free_slots_.pop_back();
  s.n_computed = ctx_.kv_attach_prefix(s.slot, s.tokens);
  if (draft_ && s.model_draft) draft_->attach(s.slot, s.tokens);
  stats_.cached_tokens += s.n_computed;
  stats_.prefix_lookup_tokens += static_cast<int64_t>(s.tokens.size());
  if (s.prompt_cached < 0) s.prompt_cached = s.n_computed;  // a recomputation after preemption is not the prompt's
}

// Admits waiting sequences in order while slots are free and the pool has room for all
// their tokens (or nothing runs, so the first one always gets its chance). Parked caches
// give way to them.
void Scheduler::admit() {
  while (!waiting_.empty() && static_cast<int>(running_.size()) < opts_.max_sequences) {
    Sequence& s = *waiting_.front();
    const bool own_cache = s.resume && find_parked(s.cache_key) != parked_.end();
    if (!own_cache && free_slots_.empty() && !evict_parked(s.cache_key)) break;
    if (!own_cache) {
      std::fill(need_.begin(), need_.end(), 0);
      need_[free_slots_.back()] = static_cast<int>(s.tokens.size());
      while (!running_.empty() && !ctx_.kv_cache().fits(need_) && evict_parked(s.cache_key)) {}
      if (!running_.empty() && !ctx_.kv_cache().fits(need_)) break;
    }
    seat(s);
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
  }
}

// Frees the sequence's blocks and queues it first, to be recomputed from its tokens.
void Scheduler::preempt(Sequence& s) {
  release(s);
  s.n_computed = 0;
  stats_.preemptions += 1;
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& r) { return r.get() == &s; });
  waiting_.push_front(std::move(*it));
  running_.erase(it);
}

// A decoding sequence whose next token would not fit the context drops old tokens first
// (context shift), at the same point plain decoding under ContextPolicy::Shift does.
void Scheduler::shift_if_full(Sequence& s) {
  if (!s.shifts || s.n_computed + 1 <= ctx_.n_ctx()) return;
  s.follow_shift(ctx_.options().n_keep, ctx_.kv_shift(s.slot));
}

// Makes room for one more token of running_[i] in the pool: parked caches go first, then the
// newest sequences are preempted (possibly this one). False when it was preempted, or
// finished because it is alone and the pool holds no more.
bool Scheduler::room_for_decode(size_t i, bool plan_empty) {
  Sequence& s = *running_[i];
  const KVCache& kv = ctx_.kv_cache();
  need_[s.slot] = 1;
  while (!kv.fits(need_)) {
    need_[s.slot] = 0;
    if (evict_parked(0)) {
      need_[s.slot] = 1;
      continue;
    }
    Sequence& newest = *running_.back();
    if (&newest == &s && plan_empty && running_.size() == 1) {  // alone and the pool is full
      finish(s, FinishReason::ContextFull);
      running_.pop_back();
      return false;
    }
    preempt(newest);
    if (&newest == &s) return false;
    need_[s.slot] = 1;
  }
  return true;
}

// Decodes first (oldest first), then drafts, then prompt chunks in the budget that is left,
// each cut to what the pool holds.
std::vector<Scheduler::Chunk> Scheduler::plan_batch() {
  std::vector<Chunk> plan;
  std::fill(need_.begin(), need_.end(), 0);
  int budget = opts_.batch_tokens;
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence& s = *running_[i];
    if (!s.decoding()) continue;
    shift_if_full(s);
    if (!room_for_decode(i, plan.empty())) break;
    plan.push_back(Chunk{&s, 1});
    budget -= 1;
  }
  plan_drafts(plan, budget);
  plan_prompt_chunks(plan, budget);
  return plan;
}

void Scheduler::plan_prompt_chunks(std::vector<Chunk>& plan, int budget) {
  const KVCache& kv = ctx_.kv_cache();
  for (const auto& sp : running_) {
    Sequence& s = *sp;
    if (budget <= 0) break;
    if (s.decoding()) continue;
    int lo = 0, hi = std::min(s.remaining(), budget);  // the longest chunk the pool holds
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      need_[s.slot] = mid;
      if (kv.fits(need_)) lo = mid; else hi = mid - 1;
    }
    need_[s.slot] = lo;
    if (lo == 0) continue;
    plan.push_back(Chunk{&s, lo});
    budget -= lo;
  }
}

void Scheduler::add_rows(const Chunk& c) {
  const Sequence& s = *c.seq;
  for (int i = 0; i < c.n; ++i) {
    const int at = s.n_computed + i;
    batch_.add(s.tokens[at], at, s.slot, at + 1 == static_cast<int>(s.tokens.size()));
  }
  for (int i = 0; i < c.drafted; ++i) batch_.add(s.proposal.tokens[i], s.n_computed + c.n + i, s.slot, true);
}

TokenLogprobs token_logprobs(std::span<const float> logits, int32_t token, int n_top) {
  const LogSoftmaxRow row = log_softmax_row(logits);
  TokenLogprobs out{token, static_cast<float>(log_prob(logits, row, token)), {}};
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  const size_t k = std::min<size_t>(n_top, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  for (size_t i = 0; i < k; ++i) out.top.emplace_back(ids[i], static_cast<float>(log_prob(logits, row, ids[i])));
  return out;
}

// `rows` (whole logits rows) as the sequence samples from them: its banned tokens at -inf.
std::span<const float> Scheduler::masked(const Sequence& s, std::span<const float> rows) {
  if (!s.bans_tokens()) return rows;
  masked_.assign(rows.begin(), rows.end());
  const size_t n_vocab = q_dense_.size();
  for (size_t r = 0; r < masked_.size(); r += n_vocab)
    for (int32_t id : s.banned())
      if (id >= 0 && static_cast<size_t>(id) < n_vocab) masked_[r + static_cast<size_t>(id)] = -INFINITY;
  return masked_;
}

// A row (already masked()) with the grammar's mask on top, for the sequence's state now;
// empty when the grammar allows no token.
std::span<const float> Scheduler::constrained(Sequence& s, std::span<const float> row) {
  if (!s.matcher) return row;
  constrained_.resize(row.size());
  try {
    if (s.matcher->mask(row, constrained_, s.stop_tokens()) == 0) return {};
  } catch (const Error&) {  // too ambiguous or too deep to follow: it ends like a dead end
    return {};
  }
  return constrained_;
}

void Scheduler::sample(Sequence& s, std::span<const float> logits) {
  if (s.max_tokens == 0) {  // the prompt only (-n 0)
    finish(s, FinishReason::Length);
    return;
  }
  const std::span<const float> row = constrained(s, masked(s, logits));
  if (row.empty()) {
    finish(s, FinishReason::GrammarDeadEnd);
    return;
  }
  const int32_t token = s.sampler().sample(row);
  if (s.guess >= 0) s.gate.record(token == s.guess);
  s.guess = -1;
  emit(s, token, logits);
}

// A token the sampler chose from `logits`, as plain decoding takes it; false when that ended
// the sequence (Sequence::take decides).
bool Scheduler::emit(Sequence& s, int32_t token, std::span<const float> logits) {
  stats_.generated_tokens += 1;
  const TakenToken taken = s.take(token);
  if (taken.kept) {
    if (s.top_logprobs >= 0 && events_.on_logprobs)
      events_.on_logprobs(s.id, token_logprobs(logits, token, s.top_logprobs));
    if (events_.on_token) events_.on_token(s.id, token);
    if (events_.on_text) events_.on_text(s.id, taken.text);
  }
  if (!taken.end) return true;
  finish(s, *taken.end);
  return false;
}

void Scheduler::roll_back_to(Sequence& s, int n_tokens) {
  ctx_.kv_rollback(s.slot, s.n_computed - n_tokens);
  s.computed_up_to(n_tokens);
}

bool Scheduler::step() {
  retire_cancelled();
  admit();
  if (running_.empty()) return !waiting_.empty();
  std::vector<Chunk> plan = plan_batch();
  // Prompts that all wait for blocks held by each other: the newest gives way, and a
  // sequence alone that the pool cannot grow any further ends.
  while (plan.empty() && !running_.empty()) {
    if (evict_parked(0)) {
      plan = plan_batch();
      continue;
    }
    if (running_.size() == 1) {
      finish(*running_.back(), FinishReason::ContextFull);
      running_.pop_back();
      return true;
    }
    preempt(*running_.back());
    plan = plan_batch();
  }
  if (plan.empty()) return !idle();
  if (draft_) draft_with_model(plan);
  batch_.clear();
  for (const Chunk& c : plan) add_rows(c);
  const std::span<const float> logits = ctx_.decode(batch_);
  stats_.steps += 1;
  stats_.batch_tokens += static_cast<int64_t>(batch_.size());
  take_outputs(plan, logits);
  return true;
}

// Samples (or verifies drafts) from the step's logits, and retires what finished.
void Scheduler::take_outputs(const std::vector<Chunk>& plan, std::span<const float> logits) {
  const size_t n_vocab = static_cast<size_t>(ctx_.n_vocab());
  size_t row = 0;
  std::vector<Sequence*> done;
  for (const Chunk& c : plan) {
    Sequence& s = *c.seq;
    if (c.drafted > 0) {
      verify(s, c.drafted, logits.subspan(row * n_vocab, (c.drafted + 1) * n_vocab));
      row += c.drafted + 1;
    } else {
      s.n_computed += c.n;
      if (s.remaining() != 0) continue;
      sample(s, logits.subspan(row++ * n_vocab, n_vocab));
    }
    if (s.slot < 0) done.push_back(&s);
  }
  std::erase_if(running_, [&](const auto& s) { return std::find(done.begin(), done.end(), s.get()) != done.end(); });
}

}  // namespace ember
