#include "engine/draft/draft_setup.h"

#include <fmt/format.h>

#include <filesystem>

#include "engine/draft/speculative.h"
#include "engine/draft/vocab_compat.h"
#include "engine/loaded_model.h"
#include "util/error.h"

namespace ember {

void validate(const DraftOptions& o) {
  if (!o.model_path.empty() && o.ngram > 0)
    fail(ErrorKind::InvalidArgument, "give either --draft FILE or --draft-ngram N, not both");
  if (o.ngram < 0) fail(ErrorKind::InvalidArgument, "--draft-ngram {} must be >= 1 (0: off)", o.ngram);
  if (o.max < 1 || o.max >= kMaxVerifyRows)
    fail(ErrorKind::InvalidArgument, "--draft-max {} must be between 1 and {} (one verify pass takes {} rows)", o.max,
         kMaxVerifyRows - 1, kMaxVerifyRows);
  if (o.min < 1 || o.min > o.max)
    fail(ErrorKind::InvalidArgument, "--draft-min {} must be between 1 and --draft-max {}", o.min, o.max);
}

DraftContext load_draft_context(const DraftOptions& options, const Context& target, const Tokenizer& tok,
                                ThreadPool& pool, bool verbose) {
  DraftContext d;
  d.model = Model::load(options.model_path, {.print_plan = verbose, .gpu_layers = options.gpu_layers});
  require_compatible_vocab(tok.vocab(), Vocab::from_gguf(d.model->gguf()));
  choose_cpu_kernels(pool, *d.model, verbose);  // the draft's types may not be the target's
  ContextOptions ctx = target.options();
  ctx.n_ctx = target.n_ctx();
  ctx.k_type = ctx.v_type = DType::F16;
  ctx.policy = ContextPolicy::Error;
  ctx.print_plan = verbose;
  d.context = std::make_unique<Context>(*d.model, ctx, pool);
  return d;
}

DraftContext load_draft_if_asked(const DraftOptions& options, const LoadedModel& target, bool verbose) {
  validate(options);
  if (options.model_path.empty()) return {};
  return load_draft_context(options, *target.context, *target.tokenizer, *target.pool, verbose);
}

SequenceDrafting sequence_drafting(const DraftOptions& o) {
  validate(o);
  return SequenceDrafting{.ngram = o.ngram, .max = o.max, .fixed = o.fixed, .model = !o.model_path.empty(), .min = o.min};
}

std::string draft_source_label(const DraftOptions& o) {
  if (o.model_path.empty()) return fmt::format("n-gram {}", o.ngram);
  return fmt::format("draft model {}", std::filesystem::path(o.model_path).filename().string());
}

std::string draft_stats_text(const DraftOptions& o, const DraftTally& t, const GenerationStats& g) {
  std::string out = fmt::format(
      "speculative ({}): drafted {}, accepted {} ({:.1f}%), {:.2f} tokens per target pass ({} passes)",
      o.model_path.empty() ? "n-gram" : "draft model", t.drafted, t.accepted, 100.0 * t.acceptance_rate(), t.tokens_per_pass(g.generated_tokens),
      t.target_passes);
  if (t.draft_rows > 0) out += fmt::format(", {} rows through the draft model", t.draft_rows);
  return out + fmt::format("; effective {:.2f} tok/s\n", g.generation_tps());
}

std::string add_draft_json(const std::string& json, const DraftOptions& o, const DraftTally& t,
                           const GenerationStats& g) {
  const std::string spec = fmt::format(
      "\"speculative\":{{\"source\":\"{}\",\"drafted\":{},\"accepted\":{},\"acceptance_rate\":{:.4f},"
      "\"tokens_per_pass\":{:.4f},\"target_passes\":{},\"draft_rows\":{},\"effective_tps\":{:.3f}}}",
      o.model_path.empty() ? "n-gram" : "draft model", t.drafted, t.accepted, t.acceptance_rate(),
      t.tokens_per_pass(g.generated_tokens), t.target_passes, t.draft_rows, g.generation_tps());
  const size_t close = json.rfind('}');
  if (close == std::string::npos) return json;
  return json.substr(0, close) + "," + spec + json.substr(close);
}

}  // namespace ember
