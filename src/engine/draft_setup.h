// What `run`, `chat` and `bench` need for speculative decoding beyond the target: the draft flags,
// loading and checking the draft model (sharing the target's thread pool: the two never
// run at the same time), the decoder, and the statistics for stderr and --json.
//
//   ember run -m big.gguf --draft small.gguf -p "..."      draft model, k adapted per round
//   ember run -m big.gguf --draft-ngram 3 -f edit.txt      prompt lookup, no draft model
//   ember chat -m big.gguf --draft small.gguf              every reply speculative
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "engine/loaded_model.h"
#include "engine/speculative.h"

namespace ember {

struct DraftOptions {
  std::string model_path;  // --draft FILE
  int gpu_layers = -1;     // -ngld: the draft model's layers on the CUDA device (-1: all when there is one)
  int ngram = 0;           // --draft-ngram N: prompt-lookup drafting with n-grams up to N
  int max = 8;             // --draft-max
  int min = 1;             // --draft-min
  bool fixed = false;      // --draft-fixed: always draft max (no cost model), for measurements
  bool enabled() const { return !model_path.empty() || ngram > 0; }
};

// Throws Error(InvalidArgument) for contradicting or out-of-range flags.
void validate(const DraftOptions& options);

// A draft model and its context beside a target's: the vocabulary checked against the
// target's tokenizer, the context sized like the target's (n_ctx, sequences, batch, KV pool
// blocks) with f16 KV and no context shift (drafts stay within the free context), sharing
// the target's thread pool (the two never run at the same time). Used by DraftRunner and by
// `ember batch|serve --draft` (the scheduler's batched draft, draft_batch.h).
struct DraftContext {
  std::unique_ptr<Model> model;
  std::unique_ptr<Context> context;
};
DraftContext load_draft_context(const DraftOptions& options, const Context& target, const Tokenizer& tok,
                                ThreadPool& pool, bool verbose);

// A Generator (engine/session.h), so a chat Conversation can run on it like on a Session.
class DraftRunner final : public Generator {
 public:
  // Loads the draft model (when given), checks its vocabulary against the target's and builds
  // the decoder. `ignore_eos` bans end-of-generation tokens in the draft as in the target.
  DraftRunner(const DraftOptions& options, LoadedModel& target, SamplerChain& sampler, bool ignore_eos,
              bool verbose);
  // The same from the target's parts (a draft model's context takes the target's size and
  // batch settings and shares `pool`).
  DraftRunner(const DraftOptions& options, Context& target, const Tokenizer& tok, ThreadPool& pool,
              SamplerChain& sampler, bool ignore_eos, bool verbose);
  ~DraftRunner() override;

  GenerationResult generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                            const TextSink& on_text) override;
  const std::vector<int32_t>& cached_tokens() const override { return decoder_->cached_tokens(); }
  void clear() override { decoder_->clear(); }
  // As a freshly built runner: empty caches and a fresh cost model (benchmark repetitions).
  void restart() { decoder_->restart(); }
  // "draft model" or "n-gram", with the file or N: "draft model small.gguf", "n-gram 3".
  std::string source_label() const;
  int n_ctx() const override { return n_ctx_; }

  const SpeculativeStats& last_stats() const { return stats_; }
  // Lines for stderr after the generation statistics.
  std::string stats_text(const GenerationStats& generation) const;
  // `json` (one object, as format_stats_json writes it) with a "speculative" object added.
  std::string add_json(const std::string& json, const GenerationStats& generation) const;

 private:
  DraftOptions options_;
  DraftContext draft_;
  std::unique_ptr<DraftSource> source_;
  std::unique_ptr<SpeculativeDecoder> decoder_;
  SpeculativeStats stats_;
  int n_ctx_ = 0;
};

}  // namespace ember
