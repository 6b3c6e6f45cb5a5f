#include "engine/cached_tokens.h"

#include <algorithm>
#include <cstddef>

#include "model/model.h"
#include "util/interrupt.h"

namespace ember {

void follow_context_shift(const Context& ctx, std::vector<int32_t>& cached, GenerationStats& stats) {
  const size_t held = static_cast<size_t>(ctx.kv_n_tokens(0));
  if (held >= cached.size()) return;
  const size_t dropped = cached.size() - held;
  const size_t keep = static_cast<size_t>(std::max(0, ctx.options().n_keep));
  cached.erase(cached.begin() + static_cast<std::ptrdiff_t>(keep),
               cached.begin() + static_cast<std::ptrdiff_t>(keep + dropped));
  stats.shifted_tokens += static_cast<int>(dropped);
}

size_t reuse_cached_prefix(Context& ctx, std::span<const int32_t> prompt, std::vector<int32_t>& cached) {
  size_t common = 0;
  while (common < cached.size() && common < prompt.size() && cached[common] == prompt[common]) ++common;
  common = std::min(common, prompt.size() - 1);
  if (cached.size() > common) {
    ctx.kv_rollback(0, static_cast<int>(cached.size() - common));
    cached.resize(common);
  }
  return common;
}

bool prefill_cached(Context& ctx, std::span<const int32_t> tokens, std::vector<int32_t>& cached,
                    std::vector<float>& last_logits, GenerationStats& stats) {
  const size_t chunk = static_cast<size_t>(std::max(1, ctx.options().n_batch));
  Batch batch;
  for (size_t begin = 0; begin < tokens.size(); begin += chunk) {
    if (interrupt_requested()) return false;
    const size_t end = std::min(tokens.size(), begin + chunk);
    batch.clear();
    for (size_t i = begin; i < end; ++i) batch.add(tokens[i], -1, 0, i + 1 == tokens.size());
    const std::span<const float> logits = ctx.decode(batch);
    cached.insert(cached.end(), tokens.begin() + static_cast<std::ptrdiff_t>(begin),
                  tokens.begin() + static_cast<std::ptrdiff_t>(end));
    follow_context_shift(ctx, cached, stats);
    if (end == tokens.size()) last_logits.assign(logits.begin(), logits.end());
  }
  return true;
}

}  // namespace ember
