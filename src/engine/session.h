// One conversation with a model: the tokens its KV cache holds, and generation on top.
//
// generate(prompt) reuses the longest common prefix of `prompt` and what the cache already
// holds (rolling back the rest), decodes only the new tokens in chunks of n_batch
// (prefill), then samples token after token, streaming text through a StreamingDecoder,
// until an end-of-generation token, the token limit, a full context (under
// ContextPolicy::Error) or Ctrl-C. Chat turns therefore only decode the new turn.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/generation_stats.h"

namespace ember {

class Context;
class Tokenizer;
class SamplerChain;

struct GenerateOptions {
  int max_tokens = -1;      // stop after this many generated tokens; < 0: no limit
  bool ignore_eos = false;  // end-of-generation tokens get probability 0 (llama.cpp --ignore-eos)
};

struct GenerationResult {
  GenerationStats stats;
  std::vector<int32_t> tokens;  // generated, without the end-of-generation token
  std::string text;             // their text, as streamed
};

// What a conversation generates through: plain decoding (Session, below) or speculative
// decoding (DraftRunner, engine/draft_setup.h). Each keeps the token list of one KV cache and
// reuses its longest common prefix with the next prompt.
class Generator {
 public:
  using TextSink = std::function<void(std::string_view)>;
  virtual ~Generator() = default;
  virtual GenerationResult generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                    const TextSink& on_text) = 0;
  virtual const std::vector<int32_t>& cached_tokens() const = 0;
  virtual void clear() = 0;  // empties the KV cache(s)
  virtual int n_ctx() const = 0;
};

class Session : public Generator {
 public:
  Session(Context& ctx, const Tokenizer& tok, SamplerChain& sampler);

  // Throws Error(ContextFull) when the prompt alone exceeds the context (both counts in the
  // message) and Error(InvalidArgument) for an empty prompt.
  GenerationResult generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                            const TextSink& on_text) override;

  // Throws Error(ContextFull) naming both counts when a prompt of n_tokens cannot fit.
  void check_prompt_fits(size_t n_tokens) const;

  // The tokens the KV cache holds, in order (after a context shift: without the dropped
  // ones).
  const std::vector<int32_t>& cached_tokens() const override { return cached_; }
  void clear() override;  // empties the KV cache

  int n_ctx() const override;

 private:
  // Decodes `tokens` after what is cached, n_batch at a time; logits for the last one.
  // Returns false when interrupted between chunks.
  bool prefill(std::span<const int32_t> tokens, GenerationStats& stats);
  void decode_one(int32_t token, GenerationStats& stats);
  // After decode(): mirrors a context shift (tokens dropped after n_keep) in cached_.
  void follow_shift(GenerationStats& stats);

  Context& ctx_;
  const Tokenizer& tok_;
  SamplerChain& sampler_;
  std::vector<int32_t> cached_;
  std::vector<float> last_logits_;
};

}  // namespace ember
