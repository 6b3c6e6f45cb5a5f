#include "tokenizer/special_tokens.h"

namespace ember {

void SpecialMatcher::add(std::string_view text, int32_t id) {
  if (text.empty()) return;
  int32_t node = 0;
  for (const char ch : text) {
    const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(ch);
    auto it = edges_.find(key);
    if (it == edges_.end()) {
      it = edges_.emplace(key, static_cast<int32_t>(node_token_.size())).first;
      node_token_.push_back(-1);
    }
    node = it->second;
  }
  if (node_token_[node] < 0) node_token_[node] = id;  // the first of equal texts wins
  first_byte_[static_cast<uint8_t>(text[0])] = true;
}

SpecialMatcher::Match SpecialMatcher::longest_at(std::string_view text, size_t pos) const {
  Match best;
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(text[i]);
    const auto it = edges_.find(key);
    if (it == edges_.end()) break;
    node = it->second;
    if (node_token_[node] >= 0) best = {node_token_[node], i + 1 - pos};
  }
  return best;
}

}  // namespace ember
