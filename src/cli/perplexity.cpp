// `ember perplexity`: perplexity of a model on a text file the way llama.cpp measures it,
// and KL divergence against a base model's stored distributions (src/eval/).
//
//   ember perplexity -m model.gguf -f wiki.test.raw [-c 512] [-b 2048] [--chunks N] [-t N] [-ctk f16] [-ctv f16]
//   ember perplexity -m f16.gguf  -f wiki.test.raw --kl-divergence-base base.kld   # write base
//   ember perplexity -m q4_0.gguf --kl-divergence-base base.kld --kl-divergence     # compare
//   (the base may also be llama.cpp's: llama-perplexity ... --kl-divergence-base llama.kld)
#include <fmt/format.h>

#include <algorithm>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "util/thread_pool.h"
#include "backend/kv_types.h"
#include "cli/commands.h"
#include "cli/llama_flags.h"
#include "engine/loaded_model.h"
#include "eval/logprob_store.h"
#include "eval/perplexity.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace ember::cli {

namespace {

struct PerplexityArgs {
  std::string model;
  std::string text_file;
  int n_ctx = 512;
  int n_batch = 2048;
  int n_chunks = -1;
  int n_threads = 0;
  std::string kld_base;
  bool kld = false;
  bool no_repack = false;
  int gpu_layers = -1;
  int kld_top = 32;
  int kld_samples = 32;
  int n_parallel = 0;  // chunks decoded at once as sequences; 0: n_batch / n_ctx, as llama.cpp
  std::string cache_type_k = "f16", cache_type_v = "f16";  // -ctk/-ctv: what a KV type costs in PPL
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::Io, "cannot open text file {}", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A context of -np sequences of n_ctx tokens (0: as many as one batch of -b holds), with the
// -ctk/-ctv cache types; a batch spans chunks then, up to -b tokens.
std::unique_ptr<Context> make_context(const Model& model, const PerplexityArgs& a, int n_ctx, int n_chunk,
                                      ThreadPool& pool) {
  ContextOptions co;
  co.n_ctx = n_ctx;
  co.n_seq = std::clamp(a.n_parallel > 0 ? a.n_parallel : a.n_batch / n_ctx, 1, std::max(1, n_chunk));
  co.n_batch = std::min(a.n_batch, n_ctx * co.n_seq);
  co.n_ubatch = std::min(co.n_batch, 512);
  co.k_type = parse_kv_type(a.cache_type_k, "-ctk");
  co.v_type = parse_kv_type(a.cache_type_v, "-ctv");
  return std::make_unique<Context>(model, co, pool);
}

// --kl-divergence: the model against the stored base (ember's file or llama.cpp's).
int run_kl_divergence(const PerplexityArgs& a, Model& m, ThreadPool& pool, eval::EvalOptions opt, int n_threads) {
  if (a.kld_base.empty()) fail(ErrorKind::InvalidArgument, "--kl-divergence needs --kl-divergence-base FILE");
  const std::unique_ptr<eval::KldBase> base_file = eval::open_kld_base(a.kld_base);
  const eval::KldBase& base = *base_file;
  const eval::ChunkPlan plan = base.plan();
  fmt::print(stderr, "kl-divergence: {} chunks of {} tokens from {} ({}), {} threads\n", plan.n_chunk, plan.n_ctx,
             a.kld_base, base.describe(), n_threads);
  if (!base.stores_bos()) {  // llama.cpp's file: the vocabulary says, as it did for llama.cpp
    const Tokenizer tok = Tokenizer::from_gguf(m.gguf());
    opt.add_bos = tok.add_bos();
    opt.bos = tok.bos();
  }
  auto ctx = make_context(m, a, plan.n_ctx, plan.n_chunk, pool);
  opt.n_batch = ctx->options().n_batch;
  fmt::print("{}", eval::KldAccumulator::chunk_table_header());
  const eval::KldAccumulator acc = eval::kl_divergence(*ctx, base, opt, [](int chunk, const eval::KldAccumulator& r) {
    fmt::print("{}", r.chunk_row(chunk));
    std::fflush(stdout);
  });
  fmt::print("\n{}", acc.report());
  return 0;
}

int run_perplexity(const PerplexityArgs& a) {
  if (a.n_batch < 1) fail(ErrorKind::InvalidArgument, "-b {} must be positive", a.n_batch);
  if (a.kld_top < 0) fail(ErrorKind::InvalidArgument, "--kl-divergence-top {} must be >= 0", a.kld_top);
  if (a.n_parallel < 0) fail(ErrorKind::InvalidArgument, "-np {} must be >= 0", a.n_parallel);
  if (a.kld_samples < 1 || a.kld_samples > 65536) {
    fail(ErrorKind::InvalidArgument, "--kl-divergence-samples {} must be in [1, 65536]", a.kld_samples);
  }
  const int n_threads = a.n_threads > 0 ? a.n_threads : ThreadPool::default_threads();
  LoadOptions lo;
  lo.n_threads = n_threads;
  lo.repack = !a.no_repack;
  lo.gpu_layers = a.gpu_layers;
  auto model = Model::load(a.model, lo);
  ThreadPool pool(n_threads);
  choose_cpu_kernels(pool, *model, /*verbose=*/true);
  eval::EvalOptions opt;
  opt.n_batch = a.n_batch;

  if (a.kld) return run_kl_divergence(a, *model, pool, opt, n_threads);

  if (a.text_file.empty()) fail(ErrorKind::InvalidArgument, "perplexity needs a text file: -f FILE");
  const Tokenizer tok = Tokenizer::from_gguf(model->gguf());
  if (tok.add_eos()) fail(ErrorKind::Unsupported, "perplexity: the vocabulary appends EOS to every text, which llama.cpp's method excludes");
  opt.add_bos = tok.add_bos();
  opt.bos = tok.bos();
  const std::vector<int32_t> tokens = tok.encode(read_text(a.text_file), /*add_special=*/true, /*parse_special=*/false);
  const eval::ChunkPlan plan = eval::make_chunk_plan(int64_t(tokens.size()), a.n_ctx, a.n_chunks);
  auto ctx = make_context(*model, a, plan.n_ctx, plan.n_chunk, pool);
  opt.n_batch = ctx->options().n_batch;
  fmt::print(stderr, "perplexity: {} tokens, {} chunks of {} (scoring {} per chunk), batch {}, {} chunks at once, {} threads\n",
             tokens.size(), plan.n_chunk, plan.n_ctx, plan.scored_per_chunk(), opt.n_batch, ctx->options().n_seq,
             n_threads);

  std::unique_ptr<eval::LogProbWriter> writer;
  std::unique_ptr<eval::RecordBuilder> records;
  if (!a.kld_base.empty()) {
    records = std::make_unique<eval::RecordBuilder>(ctx->n_vocab(), uint32_t(a.kld_top), uint32_t(a.kld_samples));
    eval::LogProbHeader h;
    h.n_ctx = uint32_t(plan.n_ctx);
    h.n_vocab = uint32_t(ctx->n_vocab());
    h.n_chunk = uint32_t(plan.n_chunk);
    h.top_k = records->top_k();
    h.tail_samples = records->tail_samples();
    h.add_bos = opt.add_bos ? 1 : 0;
    h.bos = opt.bos;
    const std::span<const int32_t> used(tokens.data(), size_t(plan.n_chunk) * plan.n_ctx);
    writer = std::make_unique<eval::LogProbWriter>(a.kld_base, h, used);
    fmt::print(stderr, "perplexity: writing the KL-divergence base to {} (top {} + {} tail samples per position, {:.1f} MiB)\n",
               a.kld_base, h.top_k, h.tail_samples,
               double(eval::logprob_file_bytes(plan, h.top_k, h.tail_samples)) / (1 << 20));
  }
  const eval::NllStats stats = eval::perplexity(
      *ctx, tokens, plan, opt,
      [](int chunk, const eval::NllStats& running) {
        fmt::print("[{}]{:.4f},", chunk, running.ppl());
        std::fflush(stdout);
      },
      writer.get(), records.get());
  if (writer) writer->close();
  fmt::print("\nFinal estimate: PPL = {:.4f} +/- {:.5f}\n", stats.ppl(), stats.ppl_error());
  return 0;
}

}  // namespace

void add_perplexity(CLI::App& app) {
  auto args = std::make_shared<PerplexityArgs>();
  CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity of a model on a text (llama.cpp's method), KL divergence vs a base");
  cmd->add_option("-m,--model", args->model, "GGUF model file")->required();
  cmd->add_option("-f,--file", args->text_file, "text file to evaluate");
  cmd->add_option("-c,--ctx-size", args->n_ctx, "tokens per chunk (context size)")->capture_default_str();
  cmd->add_option("-b,--batch-size", args->n_batch, "tokens per decode call")->capture_default_str();
  cmd->add_option("--chunks", args->n_chunks, "evaluate at most N chunks (-1: all)")->capture_default_str();
  cmd->add_option("-t,--threads", args->n_threads, "threads (0: physical cores)");
  cmd->add_option("--parallel", args->n_parallel, "chunks decoded at once as sequences (-np; 0: -b / -c)")
      ->capture_default_str();
  add_kv_type_flags(cmd, args->cache_type_k, args->cache_type_v);
  add_no_repack_flag(cmd, args->no_repack);
  add_gpu_layers_flag(cmd, args->gpu_layers);
  cmd->add_option("--kl-divergence-base", args->kld_base,
                  "with -f: write the model's log-probs here; with --kl-divergence: read them (ember's or llama-perplexity's file)");
  cmd->add_flag("--kl-divergence", args->kld, "compare the model against --kl-divergence-base");
  cmd->add_option("--kl-divergence-top", args->kld_top,
                  "most likely tokens stored exactly per position in the base (0: the whole vocabulary, exact KLD)")
      ->capture_default_str();
  cmd->add_option("--kl-divergence-samples", args->kld_samples,
                  "tokens sampled from the rest of the distribution per position (unbiased tail estimate)")
      ->capture_default_str();
  cmd->callback([args] { set_exit_code(guarded("perplexity", [&] { return run_perplexity(*args); })); });
}

}  // namespace ember::cli
