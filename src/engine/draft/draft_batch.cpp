#include "engine/draft/draft_batch.h"

#include <algorithm>

#include "engine/draft/draft_draw.h"
#include "kv/kv_cache.h"

namespace ember {

BatchDraft::BatchDraft(Context& draft, int budget, int32_t id_limit)
    : ctx_(draft), budget_(std::min(budget, draft.options().n_batch)), id_limit_(id_limit) {
  held_.resize(static_cast<size_t>(draft.options().n_seq));
  need_.assign(held_.size(), 0);
}

void BatchDraft::attach(int slot, std::span<const int32_t> tokens) {
  clear(slot);
  const int n = ctx_.kv_attach_prefix(slot, tokens);
  held_[slot].assign(tokens.begin(), tokens.begin() + n);
}

void BatchDraft::clear(int slot) {
  ctx_.kv_clear(slot);
  held_[slot].clear();
}

// Keeps the longest prefix the draft cache shares with the sequence (at most all but its
// last token when it drafts: the logits after that token are needed, so it is decoded again).
void BatchDraft::trim(const BatchDraftJob& job) {
  std::vector<int32_t>& held = held_[job.slot];
  size_t keep = 0;
  const size_t limit = std::min(held.size(), job.tokens.size() - (job.k > 0 ? 1 : 0));
  while (keep < limit && held[keep] == job.tokens[keep]) ++keep;
  if (keep == held.size()) return;
  ctx_.kv_rollback(job.slot, static_cast<int>(held.size() - keep));
  held.resize(keep);
}

// Whether the draft's pool holds n more tokens of `slot` beside what the jobs before took.
bool BatchDraft::fits(int slot, int n) {
  need_[slot] = n;
  return ctx_.kv_cache().fits(need_);
}

// Rows from what the draft holds to the job's goal, up to a token the draft's vocabulary
// lacks (a smaller one that agrees on the rest, vocab_compat.h): the sequence then lags,
// drafting nothing more.
int BatchDraft::catch_up_rows(const BatchDraftJob& job) const {
  const int from = static_cast<int>(held_[job.slot].size());
  int to = from;
  while (to < job.goal && job.tokens[to] < ctx_.n_vocab()) ++to;
  return to - from;
}

// Catch-up rows and draft lengths, in the scheduler's order (decodes first), within the
// budget and the pool. A job drafts only when its catch-up completes this step.
std::vector<BatchDraft::Planned> BatchDraft::plan(std::span<BatchDraftJob> jobs) {
  std::fill(need_.begin(), need_.end(), 0);
  std::vector<Planned> planned;
  int budget = budget_;
  for (BatchDraftJob& job : jobs) {
    trim(job);
    const int want = catch_up_rows(job);
    Planned p{&job, std::min(want, budget)};
    while (p.rows > 0 && !fits(job.slot, p.rows)) --p.rows;
    p.drafts = job.k > 0 && p.rows == want;
    // k drafted tokens take k - 1 more slots: the last one is proposed, not decoded.
    while (p.drafts && job.k > 1 && !fits(job.slot, p.rows + job.k - 1)) --job.k;
    need_[job.slot] = p.rows + (p.drafts ? job.k - 1 : 0);
    budget -= p.rows;
    if (p.rows > 0) planned.push_back(p);
  }
  return planned;
}

void BatchDraft::append(int slot, int32_t token, bool logits) {
  std::vector<int32_t>& held = held_[slot];
  batch_.add(token, static_cast<int32_t>(held.size()), slot, logits);
  held.push_back(token);
}

// Draws the next draft token of every drafting job from its logits row (rows in job order);
// keeps those that go on.
void BatchDraft::draw(std::vector<Planned*>& drafting, std::span<const float> logits) {
  const size_t n_vocab = static_cast<size_t>(ctx_.n_vocab());
  size_t row = 0;
  std::erase_if(drafting, [&](Planned* p) {
    const BatchDraftJob& job = *p->job;
    const std::span<const float> r = logits.subspan(row++ * n_vocab, n_vocab);
    const bool more = draw_draft_token(*job.chain, r, job.banned, job.eog, id_limit_, scratch_, *job.out);
    return !more || static_cast<int>(job.out->tokens.size()) >= job.k;
  });
}

// One decode() for every job's catch-up rows; returns the drafting jobs, their first token drawn.
std::vector<BatchDraft::Planned*> BatchDraft::catch_up(std::vector<Planned>& planned) {
  batch_.clear();
  std::vector<Planned*> drafting;
  for (Planned& p : planned) {
    const BatchDraftJob& job = *p.job;
    const int from = static_cast<int>(held_[job.slot].size());
    for (int i = 0; i < p.rows; ++i) append(job.slot, job.tokens[from + i], p.drafts && i + 1 == p.rows);
    if (p.drafts) drafting.push_back(&p);
  }
  if (batch_.size() == 0) return drafting;
  const std::span<const float> logits = ctx_.decode(batch_);
  decoded_ += static_cast<int64_t>(batch_.size());
  draw(drafting, logits);
  return drafting;
}

void BatchDraft::run(std::span<BatchDraftJob> jobs) {
  for (BatchDraftJob& job : jobs)
    if (job.out) job.out->clear();
  std::vector<Planned> planned = plan(jobs);
  std::vector<Planned*> drafting = catch_up(planned);
  while (!drafting.empty()) {  // one decode() per draft position, every drafting job in it
    batch_.clear();
    for (Planned* p : drafting) append(p->job->slot, p->job->out->tokens.back(), true);
    const std::span<const float> logits = ctx_.decode(batch_);
    decoded_ += static_cast<int64_t>(batch_.size());
    draw(drafting, logits);
  }
}

}  // namespace ember
