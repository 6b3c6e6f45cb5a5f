// Where the base model's log-probabilities for --kl-divergence come from: ember's compact
// file (logprob_store.h) or the file llama.cpp's `llama-perplexity --kl-divergence-base`
// writes (llamacpp_logits.h), so a model can be checked position by position against
// llama.cpp's own logits. open_kld_base() tells them apart by their magic bytes.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "eval/chunk_plan.h"

namespace ember::eval {

struct LogProbHeader;
struct LogProbRecord;

class KldBase {
 public:
  virtual ~KldBase() = default;
  virtual const LogProbHeader& header() const = 0;
  virtual ChunkPlan plan() const = 0;
  virtual std::span<const int32_t> tokens() const = 0;  // n_chunk * n_ctx, as evaluated
  virtual int64_t n_records() const = 0;
  // Record i in [0, n_records), one per scored position in chunk order. Its spans stay
  // valid until the next call.
  virtual LogProbRecord record(int64_t i) const = 0;
  // Whether header().add_bos/bos say how chunks began; llama.cpp's file does not, and then
  // the model's vocabulary decides, as it did for llama.cpp.
  virtual bool stores_bos() const = 0;
  // One line for the log: which format, and how many entries a record holds.
  virtual std::string describe() const = 0;
};

// Opens `path` as either format; throws Error(Io/Format) naming the path and the field.
std::unique_ptr<KldBase> open_kld_base(const std::string& path);

}  // namespace ember::eval
