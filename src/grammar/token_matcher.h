// One sequence's grammar constraint at the token level: masks a logits row to the tokens
// that keep the output in the language, takes the sampled token, and rolls back. End
// tokens (the sequence's end-of-generation ids) are allowed exactly when the output so far
// is complete.
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "grammar/matcher.h"
#include "grammar/token_grammar.h"

namespace ember::grammar {

class TokenMatcher {
 public:
  explicit TokenMatcher(std::shared_ptr<const TokenGrammar> grammar);

  // `out` is `in` with refused tokens' logits at -inf (out may be in); returns how many
  // tokens stay allowed (0: the grammar can make no progress with this vocabulary).
  size_t mask(std::span<const float> in, std::span<float> out, std::span<const int32_t> end_tokens);
  size_t mask(std::span<float> logits, std::span<const int32_t> end_tokens) { return mask(logits, logits, end_tokens); }
  // Whether `token` may come next (end tokens: whether the output may end).
  bool allows(int32_t token, std::span<const int32_t> end_tokens);
  // Takes a token's bytes; false (nothing changes) when the grammar refuses them.
  bool accept(int32_t token);
  void rollback(size_t n) { matcher_.rollback(n); }
  size_t steps() const { return matcher_.steps(); }
  bool can_end() const { return matcher_.can_end(); }
  // Complete, and no byte may follow: only the end remains.
  bool finished() const { return matcher_.can_end() && !matcher_.can_continue(); }

 private:
  std::shared_ptr<const TokenGrammar> grammar_;
  Matcher matcher_;
};

}  // namespace ember::grammar
