#include "eval/bench_speculative.h"

#include "util/error.h"

namespace ember::eval {

namespace {

// One run: the prompt (untimed) then n_gen tokens; returns the generation's nanoseconds.
double timed_generation(Generator& g, std::span<const int32_t> prompt, int n_gen, std::vector<int32_t>& tokens) {
  const GenerationResult r = g.generate(prompt, {.max_tokens = n_gen, .ignore_eos = true}, {});
  if (r.stats.generated_tokens != n_gen)
    fail(ErrorKind::InvalidArgument, "bench: the speculative test generated {} of {} tokens (stopped: {})",
         r.stats.generated_tokens, n_gen, stop_reason_name(r.stats.stop));
  tokens = r.tokens;
  return r.stats.generation_ms * 1e6;
}

}  // namespace

SpeculativeBenchResult run_speculative_bench(Generator& plain, DraftRunner& spec, std::span<const int32_t> prompt,
                                             const SpeculativeBenchOptions& o) {
  if (o.n_gen < 1) fail(ErrorKind::InvalidArgument, "bench: the speculative test needs -n >= 1");
  if (o.reps < 1) fail(ErrorKind::InvalidArgument, "bench: -r {} must be at least 1", o.reps);
  if (prompt.empty()) fail(ErrorKind::InvalidArgument, "bench: the speculative test's prompt is empty");
  if (prompt.size() + static_cast<size_t>(o.n_gen) > static_cast<size_t>(plain.n_ctx()))
    fail(ErrorKind::InvalidArgument, "bench: a {}-token prompt and {} tokens do not fit the {}-token context",
         prompt.size(), o.n_gen, plain.n_ctx());
  const BenchTest test{0, o.n_gen, static_cast<int>(prompt.size()), "greedy"};
  SpeculativeBenchResult out;
  out.plain.test = test;
  out.spec.test = test;
  out.spec.test.variant = "greedy+" + spec.source_label();
  BenchSpeculative& s = out.summary;
  s.source = spec.source_label();

  std::vector<int32_t> want, got;
  if (o.warmup) {
    const int n = std::min(o.n_gen, 8);
    plain.clear();
    plain.generate(prompt, {.max_tokens = n, .ignore_eos = true}, {});
    spec.restart();
    spec.generate(prompt, {.max_tokens = n, .ignore_eos = true}, {});
  }
  for (int r = 0; r < o.reps; ++r) {
    plain.clear();
    out.plain.samples_ns.push_back(timed_generation(plain, prompt, o.n_gen, want));
    spec.restart();
    out.spec.samples_ns.push_back(timed_generation(spec, prompt, o.n_gen, got));
    if (got != want) s.same_text = false;
    const SpeculativeStats& st = spec.last_stats();
    s.drafted += st.drafted;
    s.accepted += st.accepted;
    s.target_passes += st.rounds;
    s.generated += o.n_gen;
  }
  s.plain_ts = out.plain.avg_ts();
  return out;
}

}  // namespace ember::eval
