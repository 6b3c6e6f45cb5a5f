// Lookup tables a Tokenizer derives from its Vocab once at load time (internal header).
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"

namespace ember {

struct BpeMerge {
  int32_t rank;    // position in tokenizer.ggml.merges: lower merges first
  int32_t result;  // id of the merged token
};

struct TokenizerTables {
  PreTokenizer pre = PreTokenizer::Default;
  std::vector<std::string> pieces;       // the bytes each token decodes to
  std::array<int32_t, 256> byte_token;   // token of a raw byte: <0xNN> (SPM), its stand-in (BPE)
  std::vector<uint8_t> mergeable;        // SPM: token may be the result of a merge (normal text)
  // SPM: (a << 21 | b) for every pair of adjacent characters a, b inside a mergeable token. No
  // merge can join two characters whose pair is absent, so the text splits there into
  // independent stretches (words, in practice) that are merged separately.
  std::unordered_set<uint64_t> joinable_pairs;
  std::unordered_map<uint64_t, BpeMerge> merges;  // (left id << 32 | right id) -> merge
  SpecialMatcher specials;               // control, unknown and user-defined tokens
  SpecialMatcher user_defined;           // user-defined tokens only (matched even without parse_special)

  explicit TokenizerTables(const Vocab& v);

  const BpeMerge* find_merge(int32_t left, int32_t right) const {
    const auto it = merges.find((static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right));
    return it == merges.end() ? nullptr : &it->second;
  }
};

// Within one encode call, words repeat: the ids a stretch of text produced the first time are
// copied for later occurrences instead of being merged again. Keys point into the caller's text.
class RepeatCache {
 public:
  template <class Encode>
  void encode(std::string_view stretch, std::vector<int32_t>& out, Encode&& encode_fresh) {
    if (const auto it = seen_.find(stretch); it != seen_.end()) {
      for (size_t k = it->second.first; k < it->second.second; ++k) out.push_back(out[k]);
      return;
    }
    const size_t begin = out.size();
    encode_fresh(stretch);
    seen_.emplace(stretch, std::pair{begin, out.size()});
  }

 private:
  std::unordered_map<std::string_view, std::pair<size_t, size_t>> seen_;  // -> [begin, end) in out
};

// SentencePiece-style: `text` already has spaces escaped as U+2581. Appends the ids.
void spm_encode(const Vocab& v, const TokenizerTables& t, std::string_view text, std::vector<int32_t>& out);
// Byte-level BPE of one pre-token (raw bytes). Appends the ids.
void bpe_encode_piece(const Vocab& v, const TokenizerTables& t, std::string_view piece, std::vector<int32_t>& out);

}  // namespace ember
