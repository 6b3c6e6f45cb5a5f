// Byte-level BPE (GPT-2 family): a pre-token's bytes start as one symbol each (the token of the
// byte's stand-in character) and the adjacent pair with the lowest merge rank is merged until
// no listed merge applies, leftmost first on equal ranks, as Hugging Face's BPE model does.
#include <queue>

#include "tokenizer/tokenizer_tables.h"
#include "tokenizer/unicode.h"

namespace ember {

namespace {

constexpr int32_t kRemoved = -2;
constexpr int32_t kNoToken = -1;  // a byte whose stand-in is missing from the vocabulary

struct Symbol {
  int32_t id;
  int32_t prev, next;
};

struct Candidate {
  int32_t rank;
  int32_t left, right;
  int32_t left_id, right_id;  // the pair as queued, to notice stale candidates
  int32_t result;
  bool operator<(const Candidate& o) const {  // min-heap on (rank, left) via priority_queue
    return rank > o.rank || (rank == o.rank && left > o.left);
  }
};

}  // namespace

void bpe_encode_piece(const Vocab& v, const TokenizerTables& t, std::string_view piece, std::vector<int32_t>& out) {
  if (piece.empty()) return;
  if (v.ignore_merges) {  // a pre-token that is itself a token is taken whole (llama3)
    std::string mapped;
    for (char c : piece) mapped += unicode::byte_to_bpe_char(static_cast<uint8_t>(c));
    const int32_t id = v.find(mapped);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  thread_local std::vector<Symbol> sym;
  sym.clear();
  for (size_t i = 0; i < piece.size(); ++i) {
    const int32_t id = t.byte_token[static_cast<uint8_t>(piece[i])];
    sym.push_back({id, static_cast<int32_t>(i) - 1, static_cast<int32_t>(i) + 1});
  }
  sym.back().next = -1;

  std::priority_queue<Candidate> queue;
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0 || sym[left].id < 0 || sym[right].id < 0) return;
    if (const BpeMerge* m = t.find_merge(sym[left].id, sym[right].id))
      queue.push({m->rank, left, right, sym[left].id, sym[right].id, m->result});
  };
  for (int32_t i = 1; i < static_cast<int32_t>(sym.size()); ++i) consider(i - 1, i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = sym[c.left];
    Symbol& r = sym[c.right];
    if (l.id != c.left_id || r.id != c.right_id || l.next != c.right) continue;  // stale
    l.id = c.result;
    r.id = kRemoved;
    l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = c.left;
    consider(l.prev, c.left);
    consider(c.left, l.next);
  }

  for (int32_t i = 0; i >= 0; i = sym[i].next) {
    if (sym[i].id >= 0) {
      out.push_back(sym[i].id);
    } else if (sym[i].id == kNoToken && v.special.unk >= 0) {
      out.push_back(v.special.unk);
    }
  }
}

}  // namespace ember
