#include "grammar/token_matcher.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <utility>
#include <vector>

namespace ember::grammar {

TokenMatcher::TokenMatcher(std::shared_ptr<const TokenGrammar> grammar)
    : grammar_(std::move(grammar)), matcher_(grammar_->grammar()) {}

// End tokens end the output whatever their bytes: allowed exactly when it may end.
size_t TokenMatcher::mask(std::span<float> logits, std::span<const int32_t> end_tokens) {
  std::vector<std::pair<size_t, float>> ends;
  for (int32_t t : end_tokens)
    if (t >= 0 && static_cast<size_t>(t) < logits.size()) ends.emplace_back(static_cast<size_t>(t), logits[t]);
  const std::shared_ptr<const TokenBits> bits = grammar_->allowed(matcher_);
  const size_t n = std::min(logits.size(), static_cast<size_t>(grammar_->trie().n_vocab()));
  for (size_t w = 0; w * 64 < n; ++w) {
    const uint64_t word = (*bits)[w];
    if (word == ~uint64_t{0}) continue;
    const size_t top = std::min<size_t>(64, n - w * 64);
    for (size_t b = 0; b < top; ++b)
      if (!((word >> b) & 1)) logits[w * 64 + b] = -INFINITY;
  }
  for (size_t t = n; t < logits.size(); ++t) logits[t] = -INFINITY;
  for (const auto& [t, logit] : ends) logits[t] = matcher_.can_end() ? logit : -INFINITY;
  size_t allowed = 0;
  for (size_t w = 0; w * 64 < n; ++w) allowed += static_cast<size_t>(std::popcount((*bits)[w]));
  for (const auto& [t, logit] : ends) {
    const bool bit = t < n && (((*bits)[t / 64] >> (t % 64)) & 1);
    allowed += (matcher_.can_end() ? 1 : 0) - (bit ? 1 : 0);
  }
  return allowed;
}

bool TokenMatcher::allows(int32_t token, std::span<const int32_t> end_tokens) {
  if (std::find(end_tokens.begin(), end_tokens.end(), token) != end_tokens.end()) return matcher_.can_end();
  if (token < 0 || token >= grammar_->trie().n_vocab() || !grammar_->trie().in_trie(token)) return false;
  if (!matcher_.accept(grammar_->trie().bytes(token))) return false;
  matcher_.rollback(1);
  return true;
}

bool TokenMatcher::accept(int32_t token) {
  if (token < 0 || token >= grammar_->trie().n_vocab() || !grammar_->trie().in_trie(token)) return false;
  return matcher_.accept(grammar_->trie().bytes(token));
}

}  // namespace ember::grammar
