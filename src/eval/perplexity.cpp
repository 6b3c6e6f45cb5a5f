#include "eval/perplexity.h"

#include <algorithm>

#include "sampling/log_softmax.h"
#include "eval/progress_eta.h"
#include "model/model.h"
#include "util/error.h"

namespace ember::eval {

void eval_chunks(Context& ctx, std::span<const int32_t> tokens, const ChunkPlan& plan, int c0, int n,
                 const EvalOptions& opt, std::vector<float>& rows) {
  if (n < 1 || n > ctx.options().n_seq)
    fail(ErrorKind::Internal, "{} chunks at once in a context of {} sequences", n, ctx.options().n_seq);
  const size_t n_vocab = size_t(ctx.n_vocab());
  const int last_scored = plan.n_ctx - 2;  // the last position's logits predict nothing in the chunk
  rows.resize(size_t(n) * plan.scored_per_chunk() * n_vocab);
  ctx.kv_clear();
  size_t filled = 0;
  Batch batch;
  auto flush = [&] {
    const std::span<const float> logits = ctx.decode(batch);
    if (logits.size() != size_t(batch.n_outputs()) * n_vocab) {
      fail(ErrorKind::Internal, "decode returned {} logits for {} rows of {}", logits.size(), batch.n_outputs(), n_vocab);
    }
    std::copy(logits.begin(), logits.end(), rows.begin() + ptrdiff_t(filled));
    filled += logits.size();
    batch.clear();
  };
  // Chunk after chunk, each its own sequence: the logits arrive in chunk order.
  for (int s = 0; s < n; ++s) {
    const std::vector<int32_t> input = chunk_input(tokens, plan, c0 + s, opt.add_bos, opt.bos);
    for (int pos = 0; pos < plan.n_ctx; ++pos) {
      batch.add(input[size_t(pos)], pos, s, pos >= plan.first && pos <= last_scored);
      if (int(batch.size()) == opt.n_batch) flush();
    }
  }
  if (batch.size() > 0) flush();
  if (filled != rows.size()) fail(ErrorKind::Internal, "chunks {}+{}: {} logits collected, {} expected", c0, n, filled, rows.size());
}

namespace {
void check_options(const Context& ctx, const ChunkPlan& plan, const EvalOptions& opt) {
  if (opt.n_batch < 1) fail(ErrorKind::InvalidArgument, "batch size -b {} must be positive", opt.n_batch);
  if (ctx.n_ctx() < plan.n_ctx) {
    fail(ErrorKind::InvalidArgument, "context holds {} tokens, chunks need {}", ctx.n_ctx(), plan.n_ctx);
  }
  if (opt.add_bos && (opt.bos < 0 || opt.bos >= ctx.n_vocab())) {
    fail(ErrorKind::InvalidArgument, "BOS token {} is outside the vocabulary of {}", opt.bos, ctx.n_vocab());
  }
}
}  // namespace

NllStats perplexity(Context& ctx, std::span<const int32_t> tokens, const ChunkPlan& plan, const EvalOptions& opt,
                    const PerplexityChunkFn& on_chunk, LogProbWriter* base_out, RecordBuilder* base) {
  if ((base_out == nullptr) != (base == nullptr)) fail(ErrorKind::Internal, "perplexity: writer without record builder");
  check_options(ctx, plan, opt);
  const size_t n_vocab = size_t(ctx.n_vocab());
  for (int32_t t : tokens.first(size_t(plan.n_chunk) * plan.n_ctx)) {
    if (t < 0 || size_t(t) >= n_vocab) fail(ErrorKind::InvalidArgument, "token {} outside the vocabulary of {}", t, n_vocab);
  }
  NllStats stats;
  std::vector<float> rows;
  ProgressEta progress("perplexity", plan.n_chunk);
  const int n_par = ctx.options().n_seq;
  for (int c = 0; c < plan.n_chunk; ++c) {
    if (c % n_par == 0) eval_chunks(ctx, tokens, plan, c, std::min(n_par, plan.n_chunk - c), opt, rows);
    const size_t first_target = size_t(c) * plan.n_ctx + plan.first + 1;
    const size_t first_row = size_t(c % n_par) * plan.scored_per_chunk();
    for (int i = 0; i < plan.scored_per_chunk(); ++i) {
      const std::span<const float> row(rows.data() + (first_row + size_t(i)) * n_vocab, n_vocab);
      const int32_t target = tokens[first_target + size_t(i)];
      if (base_out) {
        const LogProbRecord rec = base->build(row, target, uint64_t(c) * uint64_t(plan.scored_per_chunk()) + uint64_t(i));
        stats.add(-double(rec.log_p_target));
        base_out->append(rec);
      } else {
        stats.add(-log_prob(row, log_softmax_row(row), target));
      }
    }
    if (opt.progress) progress.step_done(c + 1);
    if (on_chunk) on_chunk(c + 1, stats);
  }
  if (opt.progress) progress.finish();
  return stats;
}

KldAccumulator kl_divergence(Context& ctx, const KldBase& base, const EvalOptions& opt_in,
                             const KldChunkFn& on_chunk) {
  const LogProbHeader& h = base.header();
  if (uint32_t(ctx.n_vocab()) != h.n_vocab) {
    fail(ErrorKind::InvalidArgument, "the model has {} tokens, the KL-divergence base was made with {}", ctx.n_vocab(),
         h.n_vocab);
  }
  // The chunks must be fed exactly as the base saw them.
  EvalOptions opt = opt_in;
  if (base.stores_bos()) {
    opt.add_bos = h.add_bos != 0;
    opt.bos = h.bos;
  }
  const ChunkPlan plan = base.plan();
  check_options(ctx, plan, opt);
  const size_t n_vocab = h.n_vocab;
  KldAccumulator acc{int(n_vocab)};
  std::vector<float> rows;
  const std::span<const int32_t> tokens = base.tokens();
  ProgressEta progress("kl-divergence", plan.n_chunk);
  int64_t record = 0;
  const int n_par = ctx.options().n_seq;
  for (int c = 0; c < plan.n_chunk; ++c) {
    if (c % n_par == 0) eval_chunks(ctx, tokens, plan, c, std::min(n_par, plan.n_chunk - c), opt, rows);
    const size_t first_target = size_t(c) * plan.n_ctx + plan.first + 1;
    const size_t first_row = size_t(c % n_par) * plan.scored_per_chunk();
    for (int i = 0; i < plan.scored_per_chunk(); ++i) {
      const std::span<const float> row(rows.data() + (first_row + size_t(i)) * n_vocab, n_vocab);
      acc.add(row, base.record(record++), tokens[first_target + size_t(i)]);
    }
    if (opt.progress) progress.step_done(c + 1);
    if (on_chunk) on_chunk(c + 1, acc);
  }
  if (opt.progress) progress.finish();
  return acc;
}

}  // namespace ember::eval
