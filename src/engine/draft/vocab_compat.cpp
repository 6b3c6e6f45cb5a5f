#include "engine/draft/vocab_compat.h"

#include <algorithm>

#include "tokenizer/vocab.h"
#include "util/error.h"

namespace ember {

std::optional<VocabMismatch> first_vocab_mismatch(const Vocab& target, const Vocab& draft) {
  const int shared = std::min(target.n_tokens(), draft.n_tokens());
  for (int32_t id = 0; id < shared; ++id) {
    const std::string& a = target.tokens[static_cast<size_t>(id)].text;
    const std::string& b = draft.tokens[static_cast<size_t>(id)].text;
    if (a != b) return VocabMismatch{id, a, b};
  }
  return std::nullopt;
}

void require_compatible_vocab(const Vocab& target, const Vocab& draft) {
  if (target.model != draft.model)
    fail(ErrorKind::InvalidArgument, "the draft's tokenizer type differs from the target's (SentencePiece vs BPE)");
  if (const auto m = first_vocab_mismatch(target, draft))
    fail(ErrorKind::InvalidArgument,
         "the draft model's vocabulary differs from the target's at token id {}: target '{}', draft '{}' "
         "({} vs {} tokens); a draft must share the target's token ids",
         m->id, m->target_text, m->draft_text, target.n_tokens(), draft.n_tokens());
}

}  // namespace ember
