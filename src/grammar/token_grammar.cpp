#include "grammar/token_grammar.h"

namespace ember::grammar {

TokenGrammar::TokenGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie)
    : grammar_(std::move(grammar)), trie_(std::move(trie)) {}

size_t TokenGrammar::cached_masks() const {
  std::lock_guard lock(mutex_);
  return cache_.size();
}

// Preorder walk: the stacks after each node's bytes sit in `buf` per depth; a node's
// stacks are computed from its parent's (depth - 1), and everything deeper is dropped
// first, the arena cut back with it.
TokenBits TokenGrammar::walk(Matcher& m) const {
  const TokenTrie& trie = *trie_;
  TokenBits bits((static_cast<size_t>(trie.n_vocab()) + 63) / 64, 0);
  Pushdown& pd = m.pushdown();
  const size_t arena0 = pd.arena_size();
  std::vector<uint32_t> buf(m.stack_buffer().begin() + static_cast<ptrdiff_t>(m.stacks_begin()),
                            m.stack_buffer().begin() + static_cast<ptrdiff_t>(m.stacks_end()));
  // level[d]: [begin, end) of the stacks after d bytes; arena[d]: the arena's size then.
  std::vector<size_t> level_end(trie.max_depth() + 1), arena(trie.max_depth() + 1);
  level_end[0] = buf.size();
  arena[0] = arena0;
  const std::vector<TrieNode>& nodes = trie.nodes();
  for (size_t i = 0; i < nodes.size();) {
    const TrieNode& n = nodes[i];
    const size_t d = n.depth;
    const size_t begin = d >= 2 ? level_end[d - 2] : 0;
    buf.resize(level_end[d - 1]);
    pd.cut_arena(arena[d - 1]);
    const bool accepted = pd.advance(buf, begin, level_end[d - 1], n.byte, buf);
    const bool alive = buf.size() > level_end[d - 1];
    if (!alive && !accepted) {
      i = n.end;
      continue;
    }
    if (n.token >= 0) bits[static_cast<size_t>(n.token) / 64] |= uint64_t{1} << (n.token % 64);
    level_end[d] = buf.size();
    arena[d] = pd.arena_size();
    i = alive ? i + 1 : n.end;  // complete: no byte may follow
  }
  for (const auto& [node, token] : trie.same_bytes())
    if (const int32_t first = nodes[node].token; (bits[static_cast<size_t>(first) / 64] >> (first % 64)) & 1)
      bits[static_cast<size_t>(token) / 64] |= uint64_t{1} << (token % 64);
  pd.cut_arena(arena0);
  return bits;
}

std::shared_ptr<const TokenBits> TokenGrammar::allowed(Matcher& m) const {
  std::string key = m.pushdown().key(std::span<const uint32_t>(m.stack_buffer()).subspan(
      m.stacks_begin(), m.stacks_end() - m.stacks_begin()));
  {
    std::lock_guard lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  }
  auto bits = std::make_shared<const TokenBits>(walk(m));
  std::lock_guard lock(mutex_);
  if (cache_.size() * bits->size() * sizeof(uint64_t) < kMaxCachedBytes) cache_.emplace(std::move(key), bits);
  return bits;
}

}  // namespace ember::grammar
