#include "engine/draft_setup.h"

#include <fmt/format.h>

#include <filesystem>

#include "engine/draft_model.h"
#include "engine/ngram_draft.h"
#include "engine/vocab_compat.h"
#include "sampling/sampler_chain.h"
#include "util/error.h"

namespace ember {

void validate(const DraftOptions& o) {
  if (!o.model_path.empty() && o.ngram > 0)
    fail(ErrorKind::InvalidArgument, "give either --draft FILE or --draft-ngram N, not both");
  if (o.ngram < 0) fail(ErrorKind::InvalidArgument, "--draft-ngram {} must be >= 1 (0: off)", o.ngram);
  if (o.max < 1) fail(ErrorKind::InvalidArgument, "--draft-max {} must be at least 1", o.max);
  if (o.min < 1 || o.min > o.max)
    fail(ErrorKind::InvalidArgument, "--draft-min {} must be between 1 and --draft-max {}", o.min, o.max);
}

DraftContext load_draft_context(const DraftOptions& options, const Context& target, const Tokenizer& tok,
                                ThreadPool& pool, bool verbose) {
  DraftContext d;
  d.model = Model::load(options.model_path, {.print_plan = verbose, .gpu_layers = options.gpu_layers});
  require_compatible_vocab(tok.vocab(), Vocab::from_gguf(d.model->gguf()));
  ContextOptions ctx = target.options();
  ctx.n_ctx = target.n_ctx();
  ctx.k_type = ctx.v_type = DType::F16;
  ctx.policy = ContextPolicy::Error;
  ctx.print_plan = verbose;
  d.context = std::make_unique<Context>(*d.model, ctx, pool);
  return d;
}

DraftRunner::DraftRunner(const DraftOptions& options, LoadedModel& target, SamplerChain& sampler, bool ignore_eos,
                         bool verbose)
    : DraftRunner(options, *target.context, *target.tokenizer, *target.pool, sampler, ignore_eos, verbose) {}

DraftRunner::DraftRunner(const DraftOptions& options, Context& target, const Tokenizer& tok, ThreadPool& pool,
                         SamplerChain& sampler, bool ignore_eos, bool verbose)
    : options_(options), n_ctx_(target.n_ctx()) {
  validate(options_);
  const std::vector<int32_t>& eog = tok.eog_ids();
  if (!options_.model_path.empty()) {
    draft_ = load_draft_context(options_, target, tok, pool, verbose);
    auto draft = std::make_unique<DraftModel>(*draft_.context, sampler, ignore_eos ? eog : std::vector<int32_t>{});
    draft->set_eog(eog);
    source_ = std::move(draft);
  } else {
    source_ = std::make_unique<NgramDraft>(options_.ngram);
  }
  decoder_ = std::make_unique<SpeculativeDecoder>(
      target, tok, sampler, *source_,
      DraftLengthOptions{.min = options_.min, .max = options_.max, .adaptive = !options_.fixed});
}

DraftRunner::~DraftRunner() = default;

GenerationResult DraftRunner::generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                                       const TextSink& on_text) {
  SpeculativeResult r = decoder_->generate(prompt, options, on_text);
  stats_ = r.spec;
  return std::move(r.generation);
}

std::string DraftRunner::source_label() const {
  if (options_.model_path.empty()) return fmt::format("n-gram {}", options_.ngram);
  return fmt::format("draft model {}", std::filesystem::path(options_.model_path).filename().string());
}

namespace {
// Plain decoding's rate as the run measured it (single-token passes), 0 when none ran.
double plain_tps(const DraftLength& length) { return length.plain_ms() > 0 ? 1000.0 / length.plain_ms() : 0.0; }
}  // namespace

std::string DraftRunner::stats_text(const GenerationStats& g) const {
  const SpeculativeStats& s = stats_;
  std::string out = fmt::format(
      "speculative ({}): drafted {}, accepted {} ({:.1f}%), mean accepted {:.2f} per drafting round, "
      "{:.2f} tokens per target pass ({} passes, {} with drafts, {} with drafting off)\n",
      source_->name(), s.drafted, s.accepted, 100.0 * s.acceptance_rate(), s.mean_accepted(),
      s.tokens_per_pass(g.generated_tokens), s.rounds, s.draft_rounds, s.off_rounds);
  out += fmt::format("speculative time: draft {:.1f} ms, target passes {:.1f} ms; effective {:.2f} tok/s", s.draft_ms,
                     s.verify_ms, g.generation_tps());
  const double plain = plain_tps(decoder_->draft_length());
  if (plain > 0) out += fmt::format(" vs ~{:.2f} tok/s for a plain step measured in this run", plain);
  out += "\n";
  return out;
}

std::string DraftRunner::add_json(const std::string& json, const GenerationStats& g) const {
  const SpeculativeStats& s = stats_;
  const std::string spec = fmt::format(
      "\"speculative\":{{\"source\":\"{}\",\"drafted\":{},\"accepted\":{},\"acceptance_rate\":{:.4f},"
      "\"mean_accepted\":{:.4f},\"tokens_per_pass\":{:.4f},\"target_passes\":{},\"draft_rounds\":{},"
      "\"off_rounds\":{},\"draft_ms\":{:.3f},\"verify_ms\":{:.3f},\"effective_tps\":{:.3f},\"plain_step_tps\":{:.3f}}}",
      source_->name(), s.drafted, s.accepted, s.acceptance_rate(), s.mean_accepted(),
      s.tokens_per_pass(g.generated_tokens), s.rounds, s.draft_rounds, s.off_rounds, s.draft_ms, s.verify_ms,
      g.generation_tps(), plain_tps(decoder_->draft_length()));
  const size_t close = json.rfind('}');
  if (close == std::string::npos) return json;
  return json.substr(0, close) + "," + spec + json.substr(close);
}

}  // namespace ember
