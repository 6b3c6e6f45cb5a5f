// SentencePiece-style BPE: start from UTF-8 characters and repeatedly merge the adjacent pair
// whose concatenation is the vocabulary token with the highest score (leftmost on ties), as
// sentencepiece's bpe_model does. Characters that never become tokens fall back to <0xNN> byte
// tokens (or UNK when the vocabulary has none).
#include <algorithm>
#include <vector>

#include "tokenizer/tokenizer_tables.h"
#include "tokenizer/unicode.h"

namespace ember {

namespace {

struct Symbol {
  uint32_t start;  // byte offset in the text
  uint32_t len;    // 0 once merged into its left neighbour
  int32_t prev, next;
};

struct Candidate {
  float score;
  int32_t left, right;
  uint32_t len;  // bytes of the merged text, to notice stale candidates
  bool operator<(const Candidate& o) const {  // max-heap: highest score, then leftmost
    return score < o.score || (score == o.score && left > o.left);
  }
};

}  // namespace

namespace {

// Merges one stretch of text that no merge can extend beyond.
void encode_stretch(const Vocab& v, const TokenizerTables& t, std::string_view text,
                    std::vector<Symbol>& sym, std::vector<Candidate>& heap, std::vector<int32_t>& out) {
  sym.clear();
  for (size_t i = 0; i < text.size();) {
    const uint32_t len = unicode::decode_utf8(text, i).len;
    const auto idx = static_cast<int32_t>(sym.size());
    sym.push_back({static_cast<uint32_t>(i), len, idx - 1, idx + 1});
    i += len;
  }
  if (sym.empty()) return;
  sym.back().next = -1;

  auto token_of = [&](uint32_t start, uint32_t len) -> int32_t {
    const int32_t id = v.find(text.substr(start, len));
    return (id >= 0 && t.mergeable[id]) ? id : -1;
  };
  heap.clear();
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const uint32_t len = sym[left].len + sym[right].len;
    const int32_t id = token_of(sym[left].start, len);
    if (id < 0) return;
    heap.push_back({v.tokens[id].score, left, right, len});
    std::push_heap(heap.begin(), heap.end());
  };
  for (int32_t i = 1; i < static_cast<int32_t>(sym.size()); ++i) consider(i - 1, i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& l = sym[c.left];
    Symbol& r = sym[c.right];
    // Stale when either side was merged elsewhere since the candidate was queued.
    if (l.len == 0 || r.len == 0 || l.next != c.right || l.len + r.len != c.len) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }

  for (int32_t i = 0; i >= 0; i = sym[i].next) {
    const Symbol& s = sym[i];
    const int32_t id = token_of(s.start, s.len);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (uint32_t k = 0; k < s.len; ++k) {  // byte fallback
      const int32_t b = t.byte_token[static_cast<uint8_t>(text[s.start + k])];
      if (b >= 0) {
        out.push_back(b);
      } else if (v.special.unk >= 0) {
        out.push_back(v.special.unk);
        break;  // one UNK per unknown character, as sentencepiece emits
      }
    }
  }
}

}  // namespace

void spm_encode(const Vocab& v, const TokenizerTables& t, std::string_view text, std::vector<int32_t>& out) {
  std::vector<Symbol> sym;
  std::vector<Candidate> heap;
  RepeatCache cache;  // stretches are mostly words, which repeat
  auto encode_cached = [&](std::string_view stretch) {
    cache.encode(stretch, out, [&](std::string_view s) { encode_stretch(v, t, s, sym, heap, out); });
  };
  size_t stretch = 0;
  char32_t prev = 0;
  for (size_t i = 0; i < text.size();) {
    const auto d = unicode::decode_utf8(text, i);
    if (i > stretch && !t.joinable_pairs.count((static_cast<uint64_t>(prev) << 21) | d.cp)) {
      encode_cached(text.substr(stretch, i - stretch));
      stretch = i;
    }
    prev = d.cp;
    i += d.len;
  }
  encode_cached(text.substr(stretch));
}

}  // namespace ember
