// Keeps the list of tokens a session believes sequence 0 of the KV cache holds in step with
// the cache. Shared by the plain generation loop and the speculative decoder, which both
// reuse cached prompt prefixes and must follow the context-shift policy.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "engine/generation_stats.h"

namespace ember {

class Context;

// After a decode: when the context shifted, drops the tokens it discarded (after n_keep)
// from `cached` and counts them in stats.shifted_tokens.
void follow_context_shift(const Context& ctx, std::vector<int32_t>& cached, GenerationStats& stats);

// Keeps the longest prefix `cached` shares with `prompt`, but never the prompt's last token
// (it is decoded again for its logits): rolls sequence 0 of the cache back past it.
// Returns the number of tokens kept.
size_t reuse_cached_prefix(Context& ctx, std::span<const int32_t> prompt, std::vector<int32_t>& cached);

// Decodes `tokens` in chunks of n_batch, appending them to `cached`; the last token's logits
// go to `last_logits`. Returns false when Ctrl-C interrupted between chunks.
bool prefill_cached(Context& ctx, std::span<const int32_t> tokens, std::vector<int32_t>& cached,
                    std::vector<float>& last_logits, GenerationStats& stats);

}  // namespace ember
