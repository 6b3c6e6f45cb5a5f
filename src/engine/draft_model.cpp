#include "engine/draft_model.h"

#include <algorithm>
#include <cmath>

#include "model/model.h"
#include "sampling/rng.h"

namespace ember {

Rng draft_stream(uint64_t target_seed) {
  uint64_t state = target_seed ^ 0x6472616674ull;  // "draft"
  return Rng(splitmix64_next(state));
}

bool draw_draft_token(SamplerChain& chain, std::span<const float> logits, std::span<const int32_t> banned,
                      std::span<const int32_t> eog, int32_t id_limit, std::vector<float>& scratch, DraftProposal& out) {
  scratch.assign(logits.begin(), logits.end());
  for (int32_t id : banned)
    if (id >= 0 && static_cast<size_t>(id) < scratch.size()) scratch[static_cast<size_t>(id)] = -INFINITY;
  Candidates q = chain.apply(scratch);
  const int32_t token = chain.draw(q);
  // A token the target does not have can never be accepted: stop before it.
  if (token >= id_limit) return false;
  chain.accept(token);
  out.tokens.push_back(token);
  out.q.push_back(std::move(q));
  return std::find(eog.begin(), eog.end(), token) == eog.end();
}

DraftModel::DraftModel(Context& draft_ctx, const SamplerChain& target_sampler, std::vector<int32_t> banned)
    : ctx_(draft_ctx),
      target_(target_sampler),
      chain_(target_sampler),
      rng_(draft_stream(target_sampler.seed())),
      seed_(target_sampler.seed()),
      banned_(std::move(banned)) {}

std::span<const float> DraftModel::follow(std::span<const int32_t> context) {
  // Keep the common prefix (at most n-1 tokens: the last one is decoded again for its logits).
  size_t common = 0;
  while (common < held_.size() && common + 1 < context.size() && held_[common] == context[common]) ++common;
  if (held_.size() > common) {
    ctx_.kv_rollback(0, static_cast<int>(held_.size() - common));
    held_.resize(common);
  }
  const size_t chunk = static_cast<size_t>(std::max(1, ctx_.options().n_batch));
  Batch batch;
  std::span<const float> logits;
  for (size_t begin = common; begin < context.size(); begin += chunk) {
    const size_t end = std::min(context.size(), begin + chunk);
    batch.clear();
    for (size_t i = begin; i < end; ++i) batch.add(context[i], -1, 0, i + 1 == context.size());
    logits = ctx_.decode(batch);
    held_.insert(held_.end(), context.begin() + static_cast<std::ptrdiff_t>(begin),
                 context.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return logits;
}

void DraftModel::prepare(std::span<const int32_t> context) {
  if (!context.empty()) follow(context);
}

void DraftModel::reset() {
  ctx_.kv_clear(0);
  held_.clear();
}

void DraftModel::propose(std::span<const int32_t> context, int max_tokens, int32_t id_limit, DraftProposal& out) {
  out.clear();
  if (max_tokens <= 0 || context.empty()) return;
  // The target's current settings; a new seed (chat's /set seed) restarts the draft's stream.
  if (target_.seed() != seed_) {
    seed_ = target_.seed();
    rng_ = draft_stream(seed_);
  }
  chain_ = target_;
  chain_.rng() = rng_;
  // The penalty window sees the same tokens the target's does.
  chain_.reset_history();
  for (int32_t t : context) chain_.accept(t);
  const size_t held_before = held_.size();
  std::span<const float> logits = follow(context);
  out.caught_up = static_cast<int>(held_.size() - std::min(held_.size(), held_before));
  draw(logits, max_tokens, id_limit, out);
  rng_ = chain_.rng();
}

void DraftModel::draw(std::span<const float> logits, int max_tokens, int32_t id_limit, DraftProposal& out) {
  for (int i = 0;; ++i) {
    if (!draw_draft_token(chain_, logits, banned_, eog_, id_limit, logits_, out) || i + 1 == max_tokens) return;
    const int32_t token = out.tokens.back();
    Batch b;
    b.add(token, -1, 0, true);
    logits = ctx_.decode(b);
    held_.push_back(token);
  }
}

}  // namespace ember
