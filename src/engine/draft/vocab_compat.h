// Can a draft model propose tokens for a target model? Token ids are what crosses between
// them, so every id both vocabularies have must mean the same text. Vocabularies that differ
// only at the end (padding rows, added tokens one model has and the other lacks) are
// compatible: the shared prefix is all a draft ever proposes (speculative.cpp cuts a draft
// before an id the target lacks).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace ember {

struct Vocab;

struct VocabMismatch {
  int32_t id;              // first id whose text differs
  std::string target_text;
  std::string draft_text;
};

// The first shared id whose token text differs, or nothing when compatible.
std::optional<VocabMismatch> first_vocab_mismatch(const Vocab& target, const Vocab& draft);

// Throws Error(InvalidArgument) naming the first differing id and both texts.
void require_compatible_vocab(const Vocab& target, const Vocab& draft);

}  // namespace ember
