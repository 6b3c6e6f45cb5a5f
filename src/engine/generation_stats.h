// What one generation did and how fast, for the stats line on stderr and --json.
//
// Timing definitions (all wall-clock, steady clock):
//   prompt_ms     decoding the prompt tokens not already in the KV cache (prefill)
//   ttft_ms       from the start of the request to the first generated token being known
//                 (prefill + first sampling)
//   generation_ms from the end of prefill to the last generated token; each generated
//                 token costs one sampling and, except the last, one decode step
//   tok/s and ms/token are generated_tokens over generation_ms.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace ember {

enum class StopReason {
  EndOfGeneration,  // the model produced an end-of-generation token
  TokenLimit,       // -n tokens were generated
  ContextFull,      // the context filled and its policy is to stop
  Interrupted,      // Ctrl-C
  GrammarDeadEnd,   // the grammar allows no token of the vocabulary from here
};
// "eog", "limit", "context-full", "interrupted", "grammar-dead-end"
const char* stop_reason_name(StopReason reason);

struct GenerationStats {
  int prompt_tokens = 0;     // tokens of the request's prompt
  int reused_tokens = 0;     // of those, already in the KV cache (chat: earlier turns)
  double prompt_ms = 0;
  double ttft_ms = 0;
  int generated_tokens = 0;
  double generation_ms = 0;
  int context_used = 0;      // tokens in the KV cache at the end
  int n_ctx = 0;
  int shifted_tokens = 0;    // dropped by a context shift during this request
  StopReason stop = StopReason::EndOfGeneration;

  int decoded_prompt_tokens() const { return prompt_tokens - reused_tokens; }
  double prompt_tps() const;
  double generation_tps() const;
  double ms_per_token() const;
};

// Identification and run-level facts that go with the stats.
struct RunFacts {
  std::string model_path;
  double load_ms = 0;
  uint64_t seed = 0;
  bool greedy = false;
  int n_threads = 0;
};

// Human-readable block for stderr (several lines, no colours).
std::string format_stats(const GenerationStats& s, const RunFacts& facts);
// One JSON object (single line) with the same numbers, plus the generated text.
std::string format_stats_json(const GenerationStats& s, const RunFacts& facts, const std::string& text);


}  // namespace ember
