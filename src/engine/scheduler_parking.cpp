// Parked caches (scheduler.h): a sequence with a cache_key leaves its slot and KV cache
// behind when it ends, so that the next request of the same conversation (resume) decodes
// only what is new, as a chat's turns do. A parked cache gives way to anyone who needs its
// slot or its blocks.
#include <algorithm>

#include "engine/draft/draft_batch.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"

namespace ember {

std::vector<Scheduler::ParkedCache>::iterator Scheduler::find_parked(uint64_t key) {
  return std::find_if(parked_.begin(), parked_.end(), [&](const ParkedCache& p) { return p.key == key; });
}

// Keeps what the sequence's cache holds of its tokens (rejected drafts go) under its key,
// in place of an older cache of that key.
void Scheduler::park(Sequence& s) {
  if (auto old = find_parked(s.cache_key); old != parked_.end()) {
    release_parked(*old);
    parked_.erase(old);
  }
  const int keep = std::min<int>(s.n_computed, static_cast<int>(s.tokens.size()));
  const int held = ctx_.kv_n_tokens(s.slot);
  if (held > keep) ctx_.kv_rollback(s.slot, held - keep);
  s.tokens.resize(keep);
  parked_.push_back(ParkedCache{s.cache_key, s.slot, std::move(s.tokens)});
  s.slot = -1;
}

// Seats `s` in the cache parked under its key: the longest prefix it shares with the tokens
// stays (never the last one: it is decoded again for its logits), the rest is rolled back.
bool Scheduler::take_parked(Sequence& s) {
  auto it = find_parked(s.cache_key);
  if (it == parked_.end()) return false;
  const std::vector<int32_t>& held = it->tokens;
  size_t common = 0;
  while (common < held.size() && common < s.tokens.size() && held[common] == s.tokens[common]) ++common;
  common = std::min(common, s.tokens.size() - 1);
  s.slot = it->slot;
  ctx_.kv_rollback(s.slot, static_cast<int>(held.size() - common));
  s.computed_up_to(static_cast<int>(common));
  s.reused = static_cast<int>(common);
  parked_.erase(it);
  return true;
}

void Scheduler::release_parked(const ParkedCache& p) {
  clear_slot(p.slot);
  free_slots_.push_back(p.slot);
}

bool Scheduler::evict_parked(uint64_t spare_key) {
  auto it = std::find_if(parked_.begin(), parked_.end(), [&](const ParkedCache& p) { return p.key != spare_key; });
  if (it == parked_.end()) return false;
  release_parked(*it);
  parked_.erase(it);
  return true;
}

std::span<const int32_t> Scheduler::parked_tokens(uint64_t key) const {
  auto it = std::find_if(parked_.begin(), parked_.end(), [&](const ParkedCache& p) { return p.key == key; });
  return it == parked_.end() ? std::span<const int32_t>() : std::span<const int32_t>(it->tokens);
}

void Scheduler::drop_parked(uint64_t key) {
  if (auto it = find_parked(key); it != parked_.end()) {
    release_parked(*it);
    parked_.erase(it);
  }
}

}  // namespace ember
