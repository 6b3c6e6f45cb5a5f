#include "eval/chunk_plan.h"

#include <algorithm>

#include "util/error.h"

namespace ember::eval {

ChunkPlan make_chunk_plan(int64_t n_tokens, int n_ctx, int n_chunks_wanted) {
  if (n_ctx < 4) fail(ErrorKind::InvalidArgument, "perplexity: context size -c {} is too small (need >= 4)", n_ctx);
  if (n_tokens < 2 * int64_t(n_ctx)) {
    fail(ErrorKind::InvalidArgument,
         "perplexity: the text tokenizes to only {} tokens; at least {} (2 chunks of -c {}) are needed",
         n_tokens, 2 * int64_t(n_ctx), n_ctx);
  }
  ChunkPlan plan;
  plan.n_ctx = n_ctx;
  plan.first = n_ctx / 2;
  const int64_t n_fit = n_tokens / n_ctx;
  plan.n_chunk = int(n_chunks_wanted < 0 ? n_fit : std::min<int64_t>(n_chunks_wanted, n_fit));
  if (plan.n_chunk < 1) fail(ErrorKind::InvalidArgument, "perplexity: --chunks {} selects no chunk", n_chunks_wanted);
  return plan;
}

std::vector<int32_t> chunk_input(std::span<const int32_t> tokens, const ChunkPlan& plan, int c,
                                 bool add_bos, int32_t bos) {
  const auto begin = tokens.begin() + int64_t(c) * plan.n_ctx;
  std::vector<int32_t> input(begin, begin + plan.n_ctx);
  if (add_bos) input[0] = bos;
  return input;
}

}  // namespace ember::eval
