#include "eval/bench_speculative.h"

#include "util/error.h"

namespace ember::eval {

namespace {

// One run from an empty cache: the prompt (untimed) then n_gen tokens.
GenerationResult timed_generation(Session& s, std::span<const int32_t> prompt, int n_gen, const SequenceDrafting& d) {
  s.clear();
  GenerationResult r = s.generate(prompt, {.max_tokens = n_gen, .ignore_eos = true, .draft = d}, {});
  if (r.stats.generated_tokens != n_gen)
    fail(ErrorKind::InvalidArgument, "bench: the speculative test generated {} of {} tokens (stopped: {})",
         r.stats.generated_tokens, n_gen, stop_reason_name(r.stats.stop));
  return r;
}

}  // namespace

SpeculativeBenchResult run_speculative_bench(Session& session, const DraftOptions& draft,
                                             std::span<const int32_t> prompt, const SpeculativeBenchOptions& o) {
  if (o.n_gen < 1) fail(ErrorKind::InvalidArgument, "bench: the speculative test needs -n >= 1");
  if (o.reps < 1) fail(ErrorKind::InvalidArgument, "bench: -r {} must be at least 1", o.reps);
  if (prompt.empty()) fail(ErrorKind::InvalidArgument, "bench: the speculative test's prompt is empty");
  if (prompt.size() + static_cast<size_t>(o.n_gen) > static_cast<size_t>(session.n_ctx()))
    fail(ErrorKind::InvalidArgument, "bench: a {}-token prompt and {} tokens do not fit the {}-token context",
         prompt.size(), o.n_gen, session.n_ctx());
  const SequenceDrafting drafting = sequence_drafting(draft);
  const BenchTest test{0, o.n_gen, static_cast<int>(prompt.size()), "greedy"};
  SpeculativeBenchResult out;
  out.plain.test = test;
  out.spec.test = test;
  out.spec.test.variant = "greedy+" + draft_source_label(draft);
  BenchSpeculative& s = out.summary;
  s.source = draft_source_label(draft);
  if (o.warmup) {
    timed_generation(session, prompt, std::min(o.n_gen, 8), {});
    timed_generation(session, prompt, std::min(o.n_gen, 8), drafting);
  }
  for (int r = 0; r < o.reps; ++r) {
    const GenerationResult plain = timed_generation(session, prompt, o.n_gen, {});
    out.plain.samples_ns.push_back(plain.stats.generation_ms * 1e6);
    const GenerationResult spec = timed_generation(session, prompt, o.n_gen, drafting);
    out.spec.samples_ns.push_back(spec.stats.generation_ms * 1e6);
    if (spec.tokens != plain.tokens) s.same_text = false;
    s.drafted += static_cast<int>(spec.draft.drafted);
    s.accepted += static_cast<int>(spec.draft.accepted);
    s.target_passes += static_cast<int>(spec.draft.target_passes);
    s.generated += o.n_gen;
  }
  s.plain_ts = out.plain.avg_ts();
  return out;
}

}  // namespace ember::eval
