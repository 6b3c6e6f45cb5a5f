// Prompt-lookup drafting: no draft model. When the last n tokens of the context occurred
// earlier in it, the tokens that followed that occurrence are proposed (largest n first, down
// to 1; the most recent occurrence wins). Output that copies from its input (editing,
// summarising, code) is then verified many tokens per target pass, at no memory cost.
// Proposals are deterministic (q one-hot), so the rejection rule stays exact.
#pragma once
#include "engine/draft/draft_source.h"

namespace ember {

class NgramDraft final : public DraftSource {
 public:
  explicit NgramDraft(int max_ngram, int min_ngram = 1);
  void propose(std::span<const int32_t> context, int max_tokens, int32_t id_limit, DraftProposal& out) override;
  bool costly() const override { return false; }
  const char* name() const override { return "n-gram"; }

 private:
  int max_ngram_, min_ngram_;
};

}  // namespace ember
