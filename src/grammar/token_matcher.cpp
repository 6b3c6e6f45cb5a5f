#include "grammar/token_matcher.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <utility>
#include <vector>

namespace ember::grammar {

TokenMatcher::TokenMatcher(std::shared_ptr<const TokenGrammar> grammar)
    : grammar_(std::move(grammar)), matcher_(grammar_->graph()) {}

// One pass over the row, 64 tokens per mask word (whole words copied or cleared). End
// tokens end the output whatever their bytes: allowed exactly when it may end.
size_t TokenMatcher::mask(std::span<const float> in, std::span<float> out, std::span<const int32_t> end_tokens) {
  const std::shared_ptr<const TokenBits> bits = grammar_->allowed(matcher_.state());
  const size_t n = std::min(in.size(), static_cast<size_t>(grammar_->trie().n_vocab()));
  std::vector<float> end_logits;  // read before the pass: `out` may be `in`
  for (int32_t t : end_tokens) end_logits.push_back(t >= 0 && static_cast<size_t>(t) < in.size() ? in[t] : 0.0f);
  size_t allowed = 0;
  for (size_t w = 0; w * 64 < n; ++w) {
    const uint64_t word = (*bits)[w];
    const size_t base = w * 64, top = std::min<size_t>(64, n - base);
    allowed += static_cast<size_t>(std::popcount(word));
    if (word == ~uint64_t{0} && top == 64) {
      std::copy_n(in.begin() + static_cast<ptrdiff_t>(base), 64, out.begin() + static_cast<ptrdiff_t>(base));
    } else if (word == 0) {
      std::fill_n(out.begin() + static_cast<ptrdiff_t>(base), top, -INFINITY);
    } else {
      for (size_t b = 0; b < top; ++b) out[base + b] = ((word >> b) & 1) ? in[base + b] : -INFINITY;
    }
  }
  for (size_t t = n; t < out.size(); ++t) out[t] = -INFINITY;
  const bool end = matcher_.can_end();
  for (size_t i = 0; i < end_tokens.size(); ++i) {
    const int32_t t = end_tokens[i];
    if (t < 0 || static_cast<size_t>(t) >= out.size()) continue;
    const bool bit = static_cast<size_t>(t) < n && (((*bits)[static_cast<size_t>(t) / 64] >> (t % 64)) & 1);
    if (bit && !end) --allowed;
    if (!bit && end) ++allowed;
    out[t] = end ? end_logits[i] : -INFINITY;
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
