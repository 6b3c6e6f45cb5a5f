// One conversation with a model (`run`, `chat`, the speculative bench): a scheduler with one
// slot (scheduler.h) whose sequence leaves its KV cache parked between requests, so that
// generate(prompt) decodes only what the cache does not already hold (its longest common
// prefix with the prompt stays; at least the last prompt token is decoded again for its
// logits). Everything else is the scheduler's, as for `batch` and `serve`: chunked prefill,
// the end of generation (end-of-generation tokens, the token limit, stop strings, a full
// context unless --context-shift), speculative drafting. Ctrl-C ends a generation between
// steps.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/draft/draft_setup.h"
#include "engine/generation_stats.h"
#include "engine/scheduler.h"

namespace ember {

class Context;
class Tokenizer;
class SamplerChain;

struct GenerateOptions {
  int max_tokens = -1;                    // stop after this many generated tokens; < 0: no limit
  bool ignore_eos = false;                // end-of-generation tokens get probability 0 (llama.cpp --ignore-eos)
  std::vector<std::string> stop_strings;  // end the generation, not included in the text
  SequenceDrafting draft;                 // speculative drafting (a draft model needs Session's draft context)
  std::shared_ptr<const grammar::TokenGrammar> grammar;  // constrained output (--grammar, --json-schema)
};

struct GenerationResult {
  GenerationStats stats;
  std::vector<int32_t> tokens;  // generated, without the end-of-generation token
  std::string text;             // their text as streamed (cut at a stop string)
  DraftTally draft;             // what drafting did (zeros without it)
};

class Session {
 public:
  using TextSink = std::function<void(std::string_view)>;

  // `sampler` is used by reference (chat's /set replaces it in place) and its random stream
  // goes on from one generation to the next. `draft`: a draft model's context
  // (load_draft_context) for GenerateOptions::draft.model, or null.
  Session(Context& ctx, const Tokenizer& tok, SamplerChain& sampler, Context* draft = nullptr);
  ~Session();

  // Throws Error(ContextFull) when the prompt alone exceeds the context (both counts in the
  // message) and Error(InvalidArgument) for an empty prompt.
  GenerationResult generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                            const TextSink& on_text);

  // Throws Error(ContextFull) naming both counts when a prompt of n_tokens cannot fit.
  void check_prompt_fits(size_t n_tokens) const;

  // The tokens the KV cache holds, in order (after a context shift: without the dropped ones).
  std::span<const int32_t> cached_tokens() const;
  void clear();  // empties the KV cache
  int n_ctx() const;

 private:
  struct Run;
  void restart();
  SequenceRequest request(std::span<const int32_t> prompt, const GenerateOptions& options) const;
  Scheduler::Events events();
  void finish(Run& run, const SequenceEnd& end) const;

  Context& ctx_;
  const Tokenizer& tok_;
  SamplerChain& sampler_;
  Context* draft_;
  std::unique_ptr<Scheduler> sched_;
  Run* run_ = nullptr;  // the generation in progress, for the scheduler's events
};

}  // namespace ember
