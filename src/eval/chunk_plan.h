// How perplexity cuts a token stream, following llama.cpp's llama-perplexity exactly:
// non-overlapping chunks of n_ctx tokens (chunk c = tokens [c*n_ctx, (c+1)*n_ctx)), the
// chunk's first token replaced by BOS when the vocabulary adds one, and only the second half
// scored: the logits at positions first .. n_ctx-2 (first = n_ctx/2) predict the tokens at
// first+1 .. n_ctx-1, so each chunk scores n_ctx - 1 - n_ctx/2 tokens and every scored token
// has at least n_ctx/2 tokens of context.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace ember::eval {

struct ChunkPlan {
  int n_ctx = 0;      // tokens per chunk
  int n_chunk = 0;    // chunks evaluated
  int first = 0;      // first position whose logits are scored (n_ctx / 2)
  int scored_per_chunk() const { return n_ctx - 1 - first; }
  int64_t scored_total() const { return int64_t(scored_per_chunk()) * n_chunk; }
};

// n_chunks_wanted < 0 means all chunks that fit. Throws Error(InvalidArgument) when n_ctx is
// below 4 or the text holds fewer than 2 * n_ctx tokens (llama.cpp's minimum), naming both.
ChunkPlan make_chunk_plan(int64_t n_tokens, int n_ctx, int n_chunks_wanted);

// The tokens the model sees for chunk `c`: the slice of `tokens`, its first token replaced by
// `bos` when add_bos is set.
std::vector<int32_t> chunk_input(std::span<const int32_t> tokens, const ChunkPlan& plan, int c,
                                 bool add_bos, int32_t bos);

}  // namespace ember::eval
