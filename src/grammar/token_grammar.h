// A grammar bound to a vocabulary: which tokens may come next from a matcher's state. The
// mask is computed by walking the token trie against the state's stacks (a subtree is cut
// as soon as the grammar refuses its first byte) and kept in a cache under the state's
// canonical key, shared by every sequence with this grammar: a state seen before (the same
// place in the same schema, in this output or another) costs a lookup, not a walk.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_trie.h"

namespace ember::grammar {

using TokenBits = std::vector<uint64_t>;  // bit t: token t allowed

class TokenGrammar {
 public:
  TokenGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie);

  // The tokens whose bytes the matcher's state accepts (end tokens not included).
  std::shared_ptr<const TokenBits> allowed(Matcher& m) const;
  // The same, computed without the cache (tests, benchmarks).
  TokenBits walk(Matcher& m) const;

  const std::shared_ptr<const Grammar>& grammar() const { return grammar_; }
  const TokenTrie& trie() const { return *trie_; }
  size_t cached_masks() const;

 private:
  static constexpr size_t kMaxCachedBytes = size_t{64} << 20;  // per grammar
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::string, std::shared_ptr<const TokenBits>> cache_;
};

}  // namespace ember::grammar
