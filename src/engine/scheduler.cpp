#include "engine/scheduler.h"

#include <algorithm>
#include <optional>

#include "engine/draft_batch.h"
#include "engine/draft_model.h"
#include "engine/ngram_draft.h"
#include "engine/speculative.h"
#include "eval/log_softmax.h"
#include "kv/kv_cache.h"
#include "util/error.h"

namespace ember {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
  }
  return "?";
}

namespace {

// How far a sequence drafts: each drafted token costs a row of the shared batch, accepted or
// not, so the i-th is drafted only while alpha^i >= kWorthRow, alpha being the sequence's
// decayed share of accepted draft positions (prior 0.5). When that is no draft at all, the
// lookup's guess for the next token (free to make) is checked against the token the
// sequence then emits, so drafting resumes as soon as its output starts copying again.
class DraftGate {
 public:
  int length(int max) const {
    const double alpha = hits_ / tries_;
    int k = 0;
    for (double p = alpha; k < max && p >= kWorthRow; p *= alpha) ++k;
    return k;
  }
  void record(bool accepted) {
    hits_ = kDecay * hits_ + (accepted ? 1.0 : 0.0);
    tries_ = kDecay * tries_ + 1.0;
  }

 private:
  static constexpr double kWorthRow = 0.5, kDecay = 0.9;
  double hits_ = 1.0, tries_ = 2.0;
};

}  // namespace

struct Scheduler::Sequence {
  Sequence(int id_, SequenceRequest&& r, int n_ctx)
      : id(id_), tokens(std::move(r.prompt)), n_prompt(tokens.size()), max_tokens(r.max_tokens),
        stop(std::move(r.stop_tokens)), top_logprobs(r.top_logprobs), sampler(r.sampling, n_ctx),
        draft_max(r.draft.max), draft_fixed(r.draft.fixed), model_draft(r.draft.model),
        draft_rng(draft_stream(sampler.seed())) {
    for (int32_t t : tokens) sampler.accept(t);
    if (r.draft.ngram > 0) draft = std::make_unique<NgramDraft>(r.draft.ngram);
  }
  int id;
  int slot = -1;
  std::vector<int32_t> tokens;    // prompt, then generated
  size_t n_prompt;
  int n_computed = 0;             // tokens in the KV cache
  int max_tokens;
  std::vector<int32_t> stop;
  int top_logprobs;
  SamplerChain sampler;
  std::unique_ptr<DraftSource> draft;  // null: no drafting
  int draft_max;
  bool draft_fixed;
  DraftGate gate;
  DraftProposal proposal;              // this step's drafted tokens
  int32_t guess = -1;                  // the lookup's next token while the gate drafts nothing
  bool model_draft;                    // drafts come from the scheduler's draft model
  bool model_guess = false;            // the gate drafts nothing: the draft model's first token is the guess
  Rng draft_rng;                       // the draft model's own stream for this sequence
  std::optional<SamplerChain> draft_chain;  // this step's: the sampler's settings and window, draft_rng
  bool drafting() const { return draft || model_draft; }
  int remaining() const { return static_cast<int>(tokens.size()) - n_computed; }
  bool decoding() const { return tokens.size() > n_prompt && remaining() == 1; }
};

Scheduler::Scheduler(Context& ctx, const SchedulerOptions& options, Events events)
    : ctx_(ctx), opts_(options), events_(std::move(events)) {
  const int n_seq = ctx.options().n_seq;
  if (opts_.max_sequences <= 0) opts_.max_sequences = n_seq;
  if (opts_.max_sequences > n_seq)
    fail(ErrorKind::InvalidArgument, "{} parallel sequences need a context of as many sequences, it has {}",
         opts_.max_sequences, n_seq);
  if (opts_.batch_tokens <= 0) opts_.batch_tokens = ctx.options().n_batch;
  opts_.batch_tokens = std::min(opts_.batch_tokens, ctx.options().n_batch);
  if (ctx.options().policy != ContextPolicy::Error)
    fail(ErrorKind::InvalidArgument, "the scheduler preempts sequences instead of shifting their context");
  for (int s = n_seq - 1; s >= 0; --s) free_slots_.push_back(s);
  need_.assign(n_seq, 0);
  q_dense_.assign(static_cast<size_t>(ctx.n_vocab()), 0.0f);
  // A sequence's rows stay within one verify pass's bitwise-invariant size, and its rollback
  // within what sliding-window layers keep behind them (one ubatch).
  max_rows_ = std::min(max_verify_rows(ctx), ctx.options().n_ubatch);
  const KVCache& kv = ctx.kv_cache();
  limits_ = SchedulerLimits{ctx.n_ctx(), kv.global_stats().total, kv.block_size(), opts_.draft != nullptr};
  if (opts_.draft) {
    if (opts_.draft->options().n_seq < n_seq)
      fail(ErrorKind::InvalidArgument, "the draft model's context has {} sequences, the target's {}",
           opts_.draft->options().n_seq, n_seq);
    draft_ = std::make_unique<BatchDraft>(*opts_.draft, opts_.batch_tokens, ctx.n_vocab());
  }
}

Scheduler::~Scheduler() {
  for (const auto& s : running_) {
    ctx_.kv_clear(s->slot);
    if (draft_) draft_->clear(s->slot);
  }
}

void check_request(const SequenceRequest& request, const SchedulerLimits& limits) {
  if (request.prompt.empty()) fail(ErrorKind::InvalidArgument, "empty prompt");
  const size_t n_ctx = static_cast<size_t>(limits.n_ctx);
  const size_t longest = request.prompt.size() + static_cast<size_t>(std::max(1, request.max_tokens));
  if (request.prompt.size() >= n_ctx || (request.max_tokens > 0 && longest > n_ctx))
    fail(ErrorKind::ContextFull, "prompt of {} tokens + max_tokens {} exceed the context of {}", request.prompt.size(),
         request.max_tokens, n_ctx);
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
  stats_.prompt_tokens += static_cast<int64_t>(request.prompt.size());
  waiting_.push_back(std::make_unique<Sequence>(next_id_, std::move(request), ctx_.n_ctx()));
  return next_id_++;
}

void Scheduler::cancel(int id) { cancelled_.push_back(id); }

bool Scheduler::cancelled(int id) const {
  return std::find(cancelled_.begin(), cancelled_.end(), id) != cancelled_.end();
}

// Gives the sequence's slot and its blocks back, the draft model's too (published full
// blocks stay in the prefix caches).
void Scheduler::release(Sequence& s) {
  ctx_.kv_clear(s.slot);
  if (draft_) draft_->clear(s.slot);
  free_slots_.push_back(s.slot);
  s.slot = -1;
}

void Scheduler::finish(Sequence& s, FinishReason reason) {
  if (s.slot >= 0) release(s);
  if (events_.on_finish) events_.on_finish(s.id, reason);
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

// Admits waiting sequences in order while slots are free and the pool has room for all
// their tokens (or nothing runs, so the first one always gets its chance).
void Scheduler::admit() {
  while (!waiting_.empty() && !free_slots_.empty() && static_cast<int>(running_.size()) < opts_.max_sequences) {
    Sequence& s = *waiting_.front();
    std::fill(need_.begin(), need_.end(), 0);
    need_[free_slots_.back()] = static_cast<int>(s.tokens.size());
    if (!running_.empty() && !ctx_.kv_cache().fits(need_)) break;
    s.slot = free_slots_.back();
    free_slots_.pop_back();
    s.n_computed = ctx_.kv_attach_prefix(s.slot, s.tokens);
    if (draft_ && s.model_draft) draft_->attach(s.slot, s.tokens);
    stats_.cached_tokens += s.n_computed;
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

// Decodes first (oldest first; when the pool has no block for one, the newest sequence is
// preempted, possibly this one), then prompt chunks in the budget that is left, each cut
// to what the pool holds.
std::vector<Scheduler::Chunk> Scheduler::plan_batch() {
  std::vector<Chunk> plan;
  std::fill(need_.begin(), need_.end(), 0);
  int budget = opts_.batch_tokens;
  const KVCache& kv = ctx_.kv_cache();
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence& s = *running_[i];
    if (!s.decoding()) continue;
    need_[s.slot] = 1;
    while (!kv.fits(need_)) {
      Sequence& newest = *running_.back();
      need_[s.slot] = 0;
      if (&newest == &s && plan.empty() && running_.size() == 1) {  // alone and the pool is full
        finish(s, FinishReason::Length);
        running_.pop_back();
        return plan;
      }
      preempt(newest);
      if (&newest == &s) break;
      need_[s.slot] = 1;
    }
    if (i >= running_.size() || running_[i].get() != &s) break;  // s itself was preempted
    plan.push_back(Chunk{&s, 1});
    budget -= 1;
  }
  plan_drafts(plan, budget);
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
  return plan;
}

// Most tokens `s` may draft this step: its own limit, the budget, the bitwise-invariant rows,
// and no more than it may still generate (the step yields up to k + 1 tokens).
int Scheduler::draft_room(const Sequence& s, int budget) const {
  const int n_tokens = static_cast<int>(s.tokens.size());
  int k = std::min({s.draft_max, budget, max_rows_ - 1, ctx_.n_ctx() - n_tokens - 1});
  if (s.max_tokens >= 0) k = std::min(k, s.max_tokens - (n_tokens - static_cast<int>(s.n_prompt)) - 1);
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
    const int want = s.draft_fixed ? room : s.gate.length(room);
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
    BatchDraftJob job{.slot = s.slot, .tokens = s.tokens, .goal = s.n_computed + c.n, .eog = s.stop};
    job.k = s.decoding() ? (s.model_guess ? 1 : c.drafted) : 0;
    if (job.k > 0) {
      s.draft_chain.emplace(s.sampler);
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
    const std::vector<int32_t>& drafted = s.proposal.tokens;
    if (s.model_guess) s.guess = drafted.empty() ? -1 : drafted[0];
    else c.drafted = static_cast<int>(drafted.size());
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
  const eval::LogSoftmaxRow row = eval::log_softmax_row(logits);
  TokenLogprobs out{token, static_cast<float>(eval::log_prob(logits, row, token)), {}};
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  const size_t k = std::min<size_t>(n_top, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  for (size_t i = 0; i < k; ++i) out.top.emplace_back(ids[i], static_cast<float>(eval::log_prob(logits, row, ids[i])));
  return out;
}

void Scheduler::sample(Sequence& s, std::span<const float> logits) {
  const int32_t token = s.sampler.sample(logits);
  if (s.guess >= 0) s.gate.record(token == s.guess);
  s.guess = -1;
  emit(s, token, logits);
}

// A token the sampler chose from `logits`, as plain decoding takes it; false when that ended
// the sequence (a stop token, its length or the context's).
bool Scheduler::emit(Sequence& s, int32_t token, std::span<const float> logits) {
  stats_.generated_tokens += 1;
  if (std::find(s.stop.begin(), s.stop.end(), token) != s.stop.end()) {
    finish(s, FinishReason::Stop);
    return false;
  }
  s.tokens.push_back(token);
  if (s.top_logprobs >= 0 && events_.on_logprobs) events_.on_logprobs(s.id, token_logprobs(logits, token, s.top_logprobs));
  if (events_.on_token) events_.on_token(s.id, token);
  const int generated = static_cast<int>(s.tokens.size() - s.n_prompt);
  if ((s.max_tokens >= 0 && generated >= s.max_tokens) || s.tokens.size() >= static_cast<size_t>(ctx_.n_ctx())) {
    finish(s, FinishReason::Length);
    return false;
  }
  return true;
}

void Scheduler::roll_back_to(Sequence& s, int n_tokens) {
  ctx_.kv_rollback(s.slot, s.n_computed - n_tokens);
  s.n_computed = n_tokens;
}

// A decode with k drafts: rows[i] predicts draft i (row 0 follows the sequence's last token,
// row k the bonus token). Emits the accepted drafts, then the token drawn in place of the
// first rejected one, or the bonus token after them all, and gives back the KV of the drafts
// it did not keep, leaving the sequence as plain decoding would. A stop token or the length
// inside the run ends it there; a cancel from an event stops it at once (plain decoding
// would emit nothing more before the next step retires it).
void Scheduler::verify(Sequence& s, int k, std::span<const float> rows) {
  const size_t n_vocab = q_dense_.size();
  auto row = [&](int i) { return rows.subspan(static_cast<size_t>(i) * n_vocab, n_vocab); };
  s.n_computed += 1 + k;  // the last token and every draft
  stats_.drafted_tokens += k;
  int i = 0;
  std::optional<int32_t> next;
  for (; i < k; ++i) {
    const DraftVerdict v = verify_draft(s.sampler, row(i), s.proposal, static_cast<size_t>(i), q_dense_);
    s.gate.record(v.accepted);
    if (!v.accepted) {
      next = v.token;
      break;
    }
    stats_.accepted_tokens += 1;
    s.sampler.accept(v.token);
    if (!emit(s, v.token, row(i))) return;  // finished: its KV went with it
    if (cancelled(s.id)) {
      roll_back_to(s, static_cast<int>(s.tokens.size()) - 1);
      return;
    }
  }
  if (!next) next = s.sampler.draw(s.sampler.apply(row(k)));
  s.sampler.accept(*next);
  roll_back_to(s, static_cast<int>(s.tokens.size()));  // what plain decoding holds before `next`
  emit(s, *next, row(i));
}

bool Scheduler::step() {
  retire_cancelled();
  admit();
  if (running_.empty()) return !waiting_.empty();
  std::vector<Chunk> plan = plan_batch();
  // Prompts that all wait for blocks held by each other: the newest gives way, and a
  // sequence alone that the pool cannot grow any further ends.
  while (plan.empty() && !running_.empty()) {
    if (running_.size() == 1) {
      finish(*running_.back(), FinishReason::Length);
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
  return true;
}

}  // namespace ember
