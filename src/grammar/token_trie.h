// The vocabulary as a trie over its tokens' bytes, laid out in preorder so the mask walk is
// one pass over an array: a node whose byte the grammar refuses skips its whole subtree by
// jumping to `end`. Built once per vocabulary and shared by every constrained request.
// Tokens with no bytes (control and special tokens) are not in it: the mask allows them
// only as the end of the output (token_mask.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember {
class Tokenizer;
}

namespace ember::grammar {

struct TrieNode {
  uint32_t end;     // one past the last node of its subtree
  int32_t token;    // a token whose bytes end here, -1 if none (others: TokenTrie::same_bytes)
  uint16_t depth;   // 1 for a token's first byte
  uint8_t byte;
};

class TokenTrie {
 public:
  // pieces[id]: the token's bytes; `in_trie[id]` false leaves it out.
  TokenTrie(const std::vector<std::string>& pieces, const std::vector<bool>& in_trie);
  // The tokenizer's trie: every token but control tokens, by its bytes (Tokenizer::piece).
  static std::shared_ptr<const TokenTrie> of(const Tokenizer& tok);

  const std::vector<TrieNode>& nodes() const { return nodes_; }
  // Tokens with the same bytes as an earlier one, with the node they end at.
  const std::vector<std::pair<uint32_t, int32_t>>& same_bytes() const { return same_bytes_; }
  int n_vocab() const { return n_vocab_; }
  size_t max_depth() const { return max_depth_; }
  const std::string& bytes(int32_t token) const { return pieces_[static_cast<size_t>(token)]; }
  bool in_trie(int32_t token) const { return in_trie_[static_cast<size_t>(token)]; }

 private:
  std::vector<TrieNode> nodes_;
  std::vector<std::pair<uint32_t, int32_t>> same_bytes_;
  std::vector<std::string> pieces_;
  std::vector<bool> in_trie_;
  int n_vocab_ = 0;
  size_t max_depth_ = 0;
};

}  // namespace ember::grammar
