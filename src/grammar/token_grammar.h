// A grammar bound to a vocabulary: which tokens may come next from a matcher's state. The
// mask is computed by walking the token trie through the grammar's state graph (a subtree
// is cut as soon as the grammar refuses its first byte; each step a table lookup once the
// graph has met the state) and kept in a cache under the state, shared by every sequence
// with this grammar: a state seen before (the same place in the same schema, in this
// output or another) costs a lookup, not a walk.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/state_graph.h"
#include "grammar/token_trie.h"

namespace ember::grammar {

using TokenBits = std::vector<uint64_t>;  // bit t: token t allowed

class TokenGrammar {
 public:
  TokenGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie);

  // The tokens whose bytes the state accepts (end tokens not included).
  std::shared_ptr<const TokenBits> allowed(int32_t state) const;
  // The same, computed without the cache (tests, benchmarks).
  TokenBits walk(int32_t state) const;

  const std::shared_ptr<const Grammar>& grammar() const { return grammar_; }
  const std::shared_ptr<StateGraph>& graph() const { return graph_; }
  const TokenTrie& trie() const { return *trie_; }
  size_t cached_masks() const;

 private:
  static constexpr size_t kMaxCachedBytes = size_t{32} << 20;  // per grammar (masks beyond it are walked each time)
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  std::shared_ptr<StateGraph> graph_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<int32_t, std::shared_ptr<const TokenBits>> cache_;
};

}  // namespace ember::grammar
