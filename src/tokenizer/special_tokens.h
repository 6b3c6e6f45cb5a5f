// Finds special tokens (control, user-defined) in raw text before the text is tokenized.
// Matching is leftmost-longest over all tokens at once, as Hugging Face tokenizers'
// added-vocabulary split does (llama.cpp instead splits token by token, longest text first; the
// two differ only when special texts overlap each other).
#pragma once
#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ember {

class SpecialMatcher {
 public:
  void add(std::string_view text, int32_t id);
  bool empty() const { return node_token_.size() <= 1; }

  struct Match {
    int32_t id = -1;
    size_t len = 0;
  };
  // The longest token whose text starts at text[pos], or id -1.
  Match longest_at(std::string_view text, size_t pos) const;

  // Calls on_text(string_view) for each stretch of plain text and on_token(id) for each match,
  // in order.
  template <class OnText, class OnToken>
  void split(std::string_view text, OnText&& on_text, OnToken&& on_token) const {
    split(text, on_text, on_token, [](size_t, const Match&) { return true; });
  }
  // Same, taking only the matches accept(pos, match) allows (the others stay plain text).
  template <class OnText, class OnToken, class Accept>
  void split(std::string_view text, OnText&& on_text, OnToken&& on_token, Accept&& accept) const {
    size_t plain = 0;
    for (size_t i = 0; i < text.size();) {
      const Match m = first_byte_[static_cast<uint8_t>(text[i])] ? longest_at(text, i) : Match{};
      if (m.id < 0 || !accept(i, m)) {
        ++i;
        continue;
      }
      if (plain < i) on_text(text.substr(plain, i - plain));
      on_token(m.id);
      i += m.len;
      plain = i;
    }
    if (plain < text.size()) on_text(text.substr(plain));
  }

 private:
  // A byte trie: node 0 is the root; edges are keyed by (node << 8 | byte).
  std::vector<int32_t> node_token_{-1};
  std::unordered_map<uint64_t, int32_t> edges_;
  std::array<bool, 256> first_byte_{};
};

}  // namespace ember
