#include "cli/generation_flags.h"

#include "backend/kv_types.h"
#include "cli/llama_flags.h"
#include "util/error.h"

namespace ember::cli {

void add_model_flags(CLI::App* cmd, GenerationFlags& f) {
  cmd->add_option("-m,--model", f.model, "GGUF model file")->required();
  cmd->add_option("-c,--ctx-size", f.n_ctx, "context size in tokens (0: the model's, at most 4096)")
      ->type_name("N");
  add_kv_type_flags(cmd, f.cache_type_k, f.cache_type_v);
  cmd->add_option("-b,--batch-size", f.n_batch, "prompt tokens per decode call")->capture_default_str();
  cmd->add_option("--ubatch-size", f.n_ubatch, "tokens per forward pass (-ub)")->capture_default_str();
  cmd->add_option("-t,--threads", f.n_threads, "threads (0: all cores)");
  cmd->add_flag("--context-shift", f.context_shift,
                "when the context is full, drop the oldest half of the tokens and continue (default: stop)");
  cmd->add_option("--keep", f.n_keep, "tokens kept at the start under --context-shift (after BOS)")
      ->capture_default_str();
  add_no_repack_flag(cmd, f.no_repack);
  add_gpu_layers_flag(cmd, f.gpu_layers);
}

void add_sampling_flags(CLI::App* cmd, GenerationFlags& f) {
  SamplingParams& s = f.sampling;
  cmd->add_option("-s,--seed", f.seed, "random seed (-1: random, printed in the stats)")->capture_default_str();
  cmd->add_option("--temp", s.temperature, "temperature (<= 0: greedy)")->capture_default_str();
  cmd->add_option("--top-k", s.top_k, "top-k sampling (0: off)")->capture_default_str();
  cmd->add_option("--top-p", s.top_p, "top-p sampling (1: off)")->capture_default_str();
  cmd->add_option("--min-p", s.min_p, "min-p sampling (0: off)")->capture_default_str();
  cmd->add_option("--repeat-penalty", s.repeat_penalty, "penalty for repeated tokens (1: off)")->capture_default_str();
  cmd->add_option("--repeat-last-n", s.repeat_last_n, "tokens the penalties look back (0: off, -1: context)")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", s.presence_penalty, "subtracted from tokens present in the window")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", s.frequency_penalty, "subtracted per occurrence in the window")
      ->capture_default_str();
}

void add_draft_flags(CLI::App* cmd, GenerationFlags& f) { add_draft_flags(cmd, f.draft); }

void add_draft_flags(CLI::App* cmd, DraftOptions& d) {
  cmd->add_option("--draft", d.model_path, "draft model (GGUF with the target's vocabulary) for speculative decoding");
  cmd->add_option("--draft-ngram", d.ngram, "speculative decoding without a draft model: propose what followed "
                  "the last N tokens earlier in the context (0: off)")->capture_default_str();
  cmd->add_option("--draft-max", d.max, "most tokens drafted per round")->capture_default_str();
  cmd->add_option("--draft-min", d.min, "fewest tokens drafted when drafting is on")->capture_default_str();
  cmd->add_flag("--draft-fixed", d.fixed, "always draft --draft-max tokens (no run-time cost model)");
  add_gpu_layers_flag(cmd, d.gpu_layers, "--n-gpu-layers-draft");
}

void finish_generation_flags(GenerationFlags& f) {
  if (f.n_ctx < 0) fail(ErrorKind::InvalidArgument, "-c {} must be >= 0 (0: the model's context)", f.n_ctx);
  if (f.n_batch < 1) fail(ErrorKind::InvalidArgument, "-b {} must be at least 1", f.n_batch);
  if (f.n_ubatch < 1) fail(ErrorKind::InvalidArgument, "-ub {} must be at least 1", f.n_ubatch);
  if (f.n_threads < 0) fail(ErrorKind::InvalidArgument, "-t {} must be positive (0: all cores)", f.n_threads);
  if (f.n_keep < 0) fail(ErrorKind::InvalidArgument, "--keep {} must be >= 0", f.n_keep);
  if (f.seed < -1) fail(ErrorKind::InvalidArgument, "--seed {} must be >= 0 (or -1 for random)", f.seed);
  validate(sampling_params(f));
  validate(f.draft);
}

ModelSetup model_setup(const GenerationFlags& f) {
  ModelSetup s;
  s.path = f.model;
  s.n_threads = f.n_threads;
  s.repack = !f.no_repack;
  s.gpu_layers = f.gpu_layers;
  s.context.n_ctx = f.n_ctx;
  s.context.n_batch = f.n_batch;
  s.context.n_ubatch = std::min(f.n_batch, f.n_ubatch);
  s.context.k_type = parse_kv_type(f.cache_type_k, "-ctk");
  s.context.v_type = parse_kv_type(f.cache_type_v, "-ctv");
  s.context.policy = f.context_shift ? ContextPolicy::Shift : ContextPolicy::Error;
  s.context.n_keep = f.n_keep;
  return s;
}

SamplingParams sampling_params(const GenerationFlags& f) {
  SamplingParams s = f.sampling;
  if (f.seed >= 0) s.seed = static_cast<uint64_t>(f.seed);
  return s;
}

}  // namespace ember::cli
