#include "grammar/token_grammar.h"

namespace ember::grammar {

TokenGrammar::TokenGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie)
    : grammar_(std::move(grammar)), trie_(std::move(trie)), graph_(std::make_shared<StateGraph>(grammar_)) {}

size_t TokenGrammar::cached_masks() const {
  std::lock_guard lock(mutex_);
  return cache_.size();
}

// Preorder walk: level[d] is the state after the first d bytes of the current node's path.
TokenBits TokenGrammar::walk(int32_t state) const {
  const TokenTrie& trie = *trie_;
  TokenBits bits((static_cast<size_t>(trie.n_vocab()) + 63) / 64, 0);
  std::vector<int32_t> level(trie.max_depth() + 1);
  level[0] = state;
  const std::vector<TrieNode>& nodes = trie.nodes();
  StateGraph& g = *graph_;
  const auto lock = g.lock();
  for (size_t i = 0; i < nodes.size();) {
    const TrieNode& n = nodes[i];
    const int32_t s = g.next(level[n.depth - 1], n.byte);
    if (s == StateGraph::kDead) {
      i = n.end;
      continue;
    }
    if (n.token >= 0) bits[static_cast<size_t>(n.token) / 64] |= uint64_t{1} << (n.token % 64);
    level[n.depth] = s;
    i = g.alive(s) ? i + 1 : n.end;  // complete: no byte may follow
  }
  for (const auto& [node, token] : trie.same_bytes())
    if (const int32_t first = nodes[node].token; (bits[static_cast<size_t>(first) / 64] >> (first % 64)) & 1)
      bits[static_cast<size_t>(token) / 64] |= uint64_t{1} << (token % 64);
  return bits;
}

std::shared_ptr<const TokenBits> TokenGrammar::allowed(int32_t state) const {
  {
    std::lock_guard lock(mutex_);
    if (auto it = cache_.find(state); it != cache_.end()) return it->second;
  }
  auto bits = std::make_shared<const TokenBits>(walk(state));
  std::lock_guard lock(mutex_);
  if (cache_.size() * bits->size() * sizeof(uint64_t) < kMaxCachedBytes) cache_.emplace(state, bits);
  return bits;
}

}  // namespace ember::grammar
