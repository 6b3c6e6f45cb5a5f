#include "engine/draft/ngram_draft.h"

#include <algorithm>

#include "util/error.h"

namespace ember {

NgramDraft::NgramDraft(int max_ngram, int min_ngram) : max_ngram_(max_ngram), min_ngram_(min_ngram) {
  if (max_ngram < 1 || min_ngram < 1 || min_ngram > max_ngram)
    fail(ErrorKind::InvalidArgument, "--draft-ngram {} must be at least 1", max_ngram);
}

void NgramDraft::propose(std::span<const int32_t> context, int max_tokens, int32_t id_limit, DraftProposal& out) {
  out.clear();
  const int64_t len = static_cast<int64_t>(context.size());
  if (max_tokens <= 0) return;
  for (int n = std::min<int64_t>(max_ngram_, len - 1); n >= min_ngram_; --n) {
    const auto suffix = context.subspan(static_cast<size_t>(len - n));
    // Latest earlier start s with context[s, s+n) == suffix and a follower at s+n < len.
    for (int64_t s = len - n - 1; s >= 0; --s) {
      if (!std::equal(suffix.begin(), suffix.end(), context.begin() + s)) continue;
      for (int64_t j = s + n; j < len && static_cast<int>(out.tokens.size()) < max_tokens; ++j) {
        const int32_t t = context[static_cast<size_t>(j)];
        if (t < 0 || t >= id_limit) break;
        out.tokens.push_back(t);
      }
      return;
    }
  }
}

}  // namespace ember
