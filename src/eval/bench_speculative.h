// `ember bench --draft FILE` / `--draft-ngram N`: decoding speed with speculative decoding
// beside plain decoding, on the same prompt, for the same number of tokens, from the same
// state. Unlike llama-bench's tg test (random tokens fed back, nothing sampled) both runs
// here generate greedily, since drafts can only be accepted for the text the model really
// writes:
//   "tg<N> @ d<P> greedy"          plain decoding: N tokens after a P-token prompt;
//   "tg<N> @ d<P> greedy+<source>" the same with drafting; greedy, so the same text (checked).
// Every repetition starts from empty caches and prefills the prompt (target, and a draft
// model in its prompt phase) outside the timed part; the timed part is the generation
// (GenerationStats::generation_ms: from the end of the prompt phase to the N-th token),
// sampling included in both. The speculative run starts with a fresh acceptance gate, as a
// new `ember run` does, so its learning rounds are in the time. Plain and speculative runs
// alternate so that a change of machine load hits both.
#pragma once
#include <cstdint>
#include <span>

#include "engine/draft/draft_setup.h"
#include "engine/session.h"
#include "eval/bench_report.h"

namespace ember::eval {

struct SpeculativeBenchOptions {
  int n_gen = 128;
  int reps = 5;
  bool warmup = true;  // one untimed short run of each first
};

struct SpeculativeBenchResult {
  BenchResult plain;  // generation time of each plain run
  BenchResult spec;   // of each speculative run
  BenchSpeculative summary;
};

// Both runs go through `session` (a greedy sampler; a draft model's context when `draft`
// names one), with and without `draft`'s drafting; end-of-generation tokens are banned so
// every run yields n_gen tokens. Throws Error(InvalidArgument) when the prompt and n_gen do
// not fit the context.
SpeculativeBenchResult run_speculative_bench(Session& session, const DraftOptions& draft,
                                             std::span<const int32_t> prompt, const SpeculativeBenchOptions& options);

}  // namespace ember::eval
