// Reads the base file of llama.cpp's `llama-perplexity --kl-divergence-base FILE`, so ember's
// --kl-divergence can compare against llama.cpp's logits position by position.
//
// Layout (llama.cpp tools/perplexity, little-endian): "_logits_", u32 n_ctx, i32 n_vocab,
// i32 n_chunk, n_chunk * n_ctx i32 tokens, then per chunk n_ctx - 1 - n_ctx/2 rows of
// nv = 2 * ((n_vocab + 1) / 2) + 4 uint16: the first four hold two floats (scale, min_log_prob)
// and then log p(i) = scale * q(i) + min_log_prob, with q = 0 for every logit at or below
// max - 16 (those keep only "below the floor"). The file does not say whether chunks began
// with BOS: the model's vocabulary decides, as it did for llama.cpp.
//
// Each row becomes a record whose top entries are the tokens above the floor (exact terms,
// the row's argmax first: llama.cpp's "same top" compares argmaxes) and whose tail is the
// mass left below the floor, one bucket with no samples: llama.cpp's own KLD drops those
// tokens entirely; lumping them keeps ember's KLD a true divergence.
#pragma once
#include <vector>

#include "eval/kld_base.h"
#include "eval/logprob_store.h"
#include "util/mmap.h"

namespace ember::eval {

class LlamaCppLogitsReader final : public KldBase {
 public:
  explicit LlamaCppLogitsReader(const std::string& path);  // maps and validates the file
  const LogProbHeader& header() const override { return header_; }
  ChunkPlan plan() const override;
  std::span<const int32_t> tokens() const override { return tokens_; }
  int64_t n_records() const override { return n_records_; }
  LogProbRecord record(int64_t i) const override;
  bool stores_bos() const override { return false; }
  std::string describe() const override;

  static bool has_magic(std::span<const uint8_t> bytes);

 private:
  size_t row_values() const;  // nv: uint16 values per row, the two floats included
  int32_t target_of(int64_t record) const;  // the token record `record` predicts
  MappedFile file_;
  LogProbHeader header_;
  std::vector<int32_t> tokens_;
  const uint8_t* rows_ = nullptr;
  int64_t n_records_ = 0;
  mutable std::vector<TopEntry> top_;  // the last record's entries
};

}  // namespace ember::eval
