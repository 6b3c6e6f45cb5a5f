#include "grammar/token_trie.h"

#include <algorithm>
#include <mutex>
#include <numeric>

#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ember::grammar {

// Tokens sorted by their bytes give the preorder directly: each token opens nodes for the
// bytes past its common prefix with the previous one, after closing the previous one's
// deeper nodes.
TokenTrie::TokenTrie(const std::vector<std::string>& pieces, const std::vector<bool>& in_trie)
    : pieces_(pieces), in_trie_(in_trie), n_vocab_(static_cast<int>(pieces.size())) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < pieces.size(); ++i)
    if (in_trie[i] && !pieces[i].empty()) ids.push_back(static_cast<int32_t>(i));
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return pieces[a] < pieces[b]; });
  if (ids.empty()) return;
  for (size_t i = 0; i < pieces.size(); ++i) in_trie_[i] = in_trie_[i] && !pieces[i].empty();
  std::vector<uint32_t> open;  // node index per depth of the current path
  const std::string* prev = nullptr;
  for (int32_t id : ids) {
    const std::string& s = pieces[static_cast<size_t>(id)];
    if (s.size() > UINT16_MAX) fail(ErrorKind::InvalidArgument, "token {} is over {} bytes", id, UINT16_MAX);
    size_t common = 0;
    if (prev) while (common < prev->size() && common < s.size() && (*prev)[common] == s[common]) ++common;
    while (open.size() > common) {
      nodes_[open.back()].end = static_cast<uint32_t>(nodes_.size());
      open.pop_back();
    }
    if (common == s.size()) {  // same bytes as the previous token
      same_bytes_.emplace_back(open.back(), id);
      continue;
    }
    for (size_t d = common; d < s.size(); ++d) {
      open.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(TrieNode{0, -1, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(s[d])});
    }
    nodes_.back().token = id;
    max_depth_ = std::max(max_depth_, s.size());
    prev = &s;
  }
  for (uint32_t n : open) nodes_[n].end = static_cast<uint32_t>(nodes_.size());
}

std::shared_ptr<const TokenTrie> TokenTrie::of(const Tokenizer& tok) {
  // One trie per vocabulary: requests with grammars share it (the vocabulary outlives them).
  static std::mutex mutex;
  static std::vector<std::pair<const Vocab*, std::weak_ptr<const TokenTrie>>> cache;
  std::lock_guard lock(mutex);
  for (auto& [vocab, weak] : cache)
    if (vocab == &tok.vocab())
      if (auto trie = weak.lock()) return trie;
  std::vector<std::string> pieces(static_cast<size_t>(tok.n_vocab()));
  std::vector<bool> in(pieces.size());
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    in[id] = !tok.is_control(id);
    if (in[id]) pieces[id] = std::string(tok.piece(id));
  }
  auto trie = std::make_shared<const TokenTrie>(pieces, in);
  std::erase_if(cache, [](const auto& e) { return e.second.expired(); });
  cache.emplace_back(&tok.vocab(), trie);
  return trie;
}

}  // namespace ember::grammar
