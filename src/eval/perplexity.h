// Perplexity and KL divergence over a token stream, the llama.cpp way (see chunk_plan.h):
// each chunk runs from an empty KV cache (as many chunks at once as the context has
// sequences), fed to the model in batches of at most n_batch
// tokens, and the logits of the scored second half are turned into statistics.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "eval/chunk_plan.h"
#include "eval/kld_stats.h"
#include "eval/logprob_store.h"
#include "eval/nll_stats.h"

namespace ember {
class Context;
}

namespace ember::eval {

struct EvalOptions {
  int n_batch = 2048;     // tokens per decode() call (a chunk needs ceil(n_ctx / n_batch) calls)
  bool add_bos = false;   // the vocabulary adds BOS: each chunk starts with `bos`
  int32_t bos = -1;
  bool progress = true;   // progress line with ETA on stderr
};

// Runs chunks [c0, c0 + n) of `tokens` as sequences 0 .. n-1 of ctx (llama.cpp's parallel
// perplexity; n <= the context's n_seq) and fills `rows` with n x scored_per_chunk() x
// n_vocab logits: those of each chunk predicting its tokens first+1 .. n_ctx-1. A chunk's
// logits do not depend on the chunks beside it.
void eval_chunks(Context& ctx, std::span<const int32_t> tokens, const ChunkPlan& plan, int c0, int n,
                 const EvalOptions& opt, std::vector<float>& rows);

// Called after each chunk with the chunk number (1-based) and the running statistics.
using PerplexityChunkFn = std::function<void(int chunk, const NllStats& running)>;

// Perplexity of `tokens`. With `base_out` the base model's records for KL divergence are
// written too (one per scored position, in order).
// `base` (may be null) builds the records, sized as the writer's header says.
NllStats perplexity(Context& ctx, std::span<const int32_t> tokens, const ChunkPlan& plan, const EvalOptions& opt,
                    const PerplexityChunkFn& on_chunk, LogProbWriter* base_out = nullptr,
                    RecordBuilder* base = nullptr);

// KL divergence of the context's model against the stored base, over the stored tokens.
using KldChunkFn = std::function<void(int chunk, const KldAccumulator& running)>;
// With a base that does not store BOS (llama.cpp's file), opt.add_bos/bos say it (the vocabulary's).
KldAccumulator kl_divergence(Context& ctx, const KldBase& base, const EvalOptions& opt, const KldChunkFn& on_chunk);

}  // namespace ember::eval
