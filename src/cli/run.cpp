// `ember run`: generate a continuation of a prompt, streamed to stdout as it is produced.
//
//   ember run -m model.gguf -p "Once upon a time" -n 128
//   ember run -m model.gguf -f prompt.txt --temp 0 --no-echo
//   ember run -m model.gguf -p "Hi" --json | jq .generation_tps
//
// stdout carries the text only (prompt + continuation, or the continuation with --no-echo;
// with --json one JSON record instead); stderr carries the load lines and the statistics.
// Ctrl-C stops generation, prints the statistics and exits with 130.
#include <fmt/format.h>

#include <cstdio>

#include "cli/commands.h"
#include "cli/generation_flags.h"
#include "cli/grammar_flags.h"
#include "engine/session.h"
#include "sampling/sampler_chain.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/mmap.h"

namespace ember::cli {

namespace {

struct RunFlags {
  GenerationFlags gen;
  std::string prompt;
  std::string prompt_file;
  bool no_echo = false;
  bool json = false;
  bool ignore_eos = false;
  GrammarFlags grammar;
};

int run_generation(CLI::App* cmd, RunFlags& f) {
  finish_generation_flags(f.gen);
  if (f.prompt.empty() == f.prompt_file.empty())
    fail(ErrorKind::InvalidArgument, "give the prompt with exactly one of -p TEXT or -f FILE");
  const std::string prompt = f.prompt_file.empty() ? f.prompt : read_text_file(f.prompt_file);
  const auto constraint = grammar_from_flags(f.grammar);  // --grammar, --json-schema

  LoadedModel m = load_model(model_setup(f.gen));
  SamplerChain sampler(sampling_params(f.gen), m.context->n_ctx());
  const DraftContext draft = load_draft_if_asked(f.gen.draft, m);  // --draft: a draft model
  Session session(*m.context, *m.tokenizer, sampler, draft.context.get());
  const std::vector<int32_t> tokens = m.tokenizer->encode(prompt, /*add_special=*/true, /*parse_special=*/true);
  session.check_prompt_fits(tokens.size());  // before anything reaches stdout

  InterruptScope interrupt_scope;
  const bool stream = !f.json;
  if (stream && !f.no_echo) {
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
  }
  GenerateOptions options;
  options.max_tokens = f.gen.n_predict;
  options.ignore_eos = f.ignore_eos;
  options.draft = sequence_drafting(f.gen.draft);  // --draft / --draft-ngram: speculative decoding
  options.grammar = bind_grammar(constraint, *m.tokenizer);
  const auto on_text = [&](std::string_view piece) {
    if (!stream) return;
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
  };
  const GenerationResult result = session.generate(tokens, options, on_text);
  if (stream) std::fputc('\n', stdout);

  RunFacts facts;
  facts.model_path = f.gen.model;
  facts.load_ms = m.load_ms;
  facts.seed = sampler.seed();
  facts.greedy = sampler.params().greedy();
  facts.n_threads = m.pool->size();
  if (result.stats.stop == StopReason::ContextFull)
    fmt::print(stderr, "\ncontext full ({} tokens): generation stopped; --context-shift drops old tokens instead, "
               "-c raises the size\n", result.stats.n_ctx);
  if (result.stats.stop == StopReason::GrammarDeadEnd)
    fmt::print(stderr, "\nthe grammar allows no token of this vocabulary here: generation stopped\n");
  if (result.stats.shifted_tokens > 0)
    fmt::print(stderr, "\ncontext shifted: {} old tokens were dropped ({})\n", result.stats.shifted_tokens,
               describe_context_policy(m.context->options()));
  fmt::print(stderr, "\n{}", format_stats(result.stats, facts));
  const bool drafting = f.gen.draft.enabled();
  if (drafting) fmt::print(stderr, "{}", draft_stats_text(f.gen.draft, result.draft, result.stats));
  if (f.json) {
    const std::string json = format_stats_json(result.stats, facts, result.text);
    fmt::print("{}\n", drafting ? add_draft_json(json, f.gen.draft, result.draft, result.stats) : json);
  }
  std::fflush(stdout);
  return result.stats.stop == StopReason::Interrupted ? exit_code_for(ErrorKind::Interrupted) : 0;
}

}  // namespace

void add_run(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run", "Generate text from a prompt, streamed as it is produced");
  add_model_flags(cmd, flags->gen);
  cmd->add_option("-p,--prompt", flags->prompt, "prompt text");
  cmd->add_option("-f,--file", flags->prompt_file, "read the prompt from a file");
  cmd->add_option("-n,--n-predict", flags->gen.n_predict, "tokens to generate (-1: until end of generation)")
      ->capture_default_str();
  add_sampling_flags(cmd, flags->gen);
  add_draft_flags(cmd, flags->gen);
  add_grammar_flags(cmd, flags->grammar);
  cmd->add_flag("--ignore-eos", flags->ignore_eos, "never stop at end-of-generation tokens (benchmarks, tests)");
  cmd->add_flag("--no-echo", flags->no_echo, "print only the continuation, not the prompt");
  cmd->add_flag("--json", flags->json, "print one JSON record (text and statistics) instead of streaming");
  cmd->callback([cmd, flags] { set_exit_code(guarded("run", [&] { return run_generation(cmd, *flags); })); });
}

}  // namespace ember::cli
