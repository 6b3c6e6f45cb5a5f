// What every subcommand needs for speculative decoding beyond the target: the draft flags,
// loading and checking the draft model (sharing the target's thread pool: the two never
// run at the same time), the scheduler's drafting settings, and the statistics for stderr
// and --json. Drafting itself is the scheduler's (engine/scheduler.h).
//
//   ember run -m big.gguf --draft small.gguf -p "..."      draft model, as far as drafts are accepted
//   ember run -m big.gguf --draft-ngram 3 -f edit.txt      prompt lookup, no draft model
//   ember chat -m big.gguf --draft small.gguf              every reply speculative
#pragma once
#include <memory>
#include <string>

#include "engine/loaded_model.h"
#include "engine/generation_stats.h"
#include "engine/scheduler.h"

namespace ember {

struct DraftOptions {
  std::string model_path;  // --draft FILE
  int gpu_layers = -1;     // -ngld: the draft model's layers on the CUDA device (-1: all when there is one)
  int ngram = 0;           // --draft-ngram N: prompt-lookup drafting with n-grams up to N
  int max = 8;             // --draft-max
  int min = 1;             // --draft-min: fewest tokens drafted when a sequence drafts at all
  bool fixed = false;      // --draft-fixed: always draft max (no acceptance gate), for measurements
  bool enabled() const { return !model_path.empty() || ngram > 0; }
};

// Throws Error(InvalidArgument) for contradicting or out-of-range flags.
void validate(const DraftOptions& options);

// A draft model and its context beside a target's: the vocabulary checked against the
// target's tokenizer, the context sized like the target's (n_ctx, sequences, batch, KV pool
// blocks) with f16 KV and no context shift (drafts stay within the free context), sharing
// the target's thread pool (the two never run at the same time): the scheduler's batched
// draft (draft_batch.h) runs on it.
struct DraftContext {
  std::unique_ptr<Model> model;
  std::unique_ptr<Context> context;
};
DraftContext load_draft_context(const DraftOptions& options, const Context& target, const Tokenizer& tok,
                                ThreadPool& pool, bool verbose);
// The same for a loaded target when the options name a draft model (validated first);
// empty otherwise (n-gram drafting or none).
DraftContext load_draft_if_asked(const DraftOptions& options, const LoadedModel& target, bool verbose = true);

// The drafting of scheduled sequences from the flags: --draft-ngram N or --draft MODEL (the
// scheduler then needs SchedulerOptions::draft, from load_draft_context), --draft-max K and
// --draft-min; --draft-fixed: every sequence drafts up to --draft-max whenever its source has
// tokens, instead of as far as its acceptance so far makes worth the rows. Throws
// validate()'s errors.
SequenceDrafting sequence_drafting(const DraftOptions& options);

// "draft model small.gguf" or "n-gram 3".
std::string draft_source_label(const DraftOptions& options);

// What drafting did during one generation (differences of SchedulerStats).
struct DraftTally {
  int64_t target_passes = 0;  // decode steps that generated (plain steps included)
  int64_t drafted = 0;        // tokens proposed and verified
  int64_t accepted = 0;       // of them, accepted
  int64_t draft_rows = 0;     // rows the draft model decoded (catch-up and drafts)
  double acceptance_rate() const { return drafted ? static_cast<double>(accepted) / drafted : 0.0; }
  double tokens_per_pass(int generated) const { return target_passes ? static_cast<double>(generated) / target_passes : 0.0; }
};

// Lines for stderr after the generation statistics.
std::string draft_stats_text(const DraftOptions& options, const DraftTally& tally, const GenerationStats& g);
// `json` (one object, as format_stats_json writes it) with a "speculative" object added.
std::string add_draft_json(const std::string& json, const DraftOptions& options, const DraftTally& tally,
                           const GenerationStats& g);

}  // namespace ember
