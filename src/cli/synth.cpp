// `ember synth --arch A --vocab-from V.gguf [shape flags] --type T -o OUT.gguf [--seed S]`:
// a model of any shape with seeded random weights (tests, benchmarks, GPU machines).
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <string>

#include "util/thread_pool.h"
#include "cli/commands.h"
#include "synth/synth.h"
#include "util/error.h"

namespace ember::cli {

namespace {

struct SynthFlags {
  std::string arch = "llama", vocab, out, type = "f16";
  int64_t n_vocab = 0, dim = 0, layers = 0, heads = 0, kv_heads = 0, ff = 0, ctx = 0, window = -1, head_dim = 0;
  int64_t experts = 0, experts_used = 0, expert_ff = 0, shared_ff = 0;
  uint64_t seed = 0;
  int threads = 0;
  bool tied = false, untied = false;
  std::string rope_scaling = "none";
  float rope_factor = 8.0f;
  int64_t rope_orig_ctx = 0;
};

RopeScaling parse_rope_scaling(const std::string& name) {
  if (name == "none") return RopeScaling::None;
  if (name == "llama3") return RopeScaling::Llama3;
  if (name == "yarn") return RopeScaling::Yarn;
  if (name == "longrope") return RopeScaling::LongRope;
  fail(ErrorKind::InvalidArgument, "--rope-scaling {}: expected none, llama3, yarn or longrope", name);
}

int run_synth(const SynthFlags& f) {
  const auto t0 = std::chrono::steady_clock::now();
  synth::SynthOptions o;
  o.shape = synth::default_shape(require_arch(f.arch));
  if (f.dim) o.shape.n_embd = f.dim;
  if (f.layers) o.shape.n_layer = f.layers;
  if (f.heads) o.shape.n_head = f.heads;
  if (f.kv_heads) o.shape.n_head_kv = f.kv_heads;
  if (f.head_dim) o.shape.head_dim = f.head_dim;
  if (f.ff) o.shape.n_ff = f.ff;
  if (f.ctx) o.shape.n_ctx = f.ctx;
  if ((f.experts || f.experts_used || f.expert_ff || f.shared_ff) && o.shape.n_expert == 0)
    fail(ErrorKind::InvalidArgument, "--experts: {} is not a mixture-of-experts family", f.arch);
  if (f.experts) o.shape.n_expert = f.experts;
  if (f.experts_used) o.shape.n_expert_used = f.experts_used;
  if (f.expert_ff && o.shape.n_ff_exp == 0)
    fail(ErrorKind::InvalidArgument, "--expert-ff: {} experts are --ff wide", f.arch);
  if (f.shared_ff && o.shape.n_ff_shexp == 0)
    fail(ErrorKind::InvalidArgument, "--shared-ff: {} has no shared expert", f.arch);
  // Experts of their own width default to a fraction of --ff (synth::default_shape).
  if (o.shape.n_ff_exp) o.shape.n_ff_exp = f.expert_ff ? f.expert_ff : o.shape.n_ff / 4;
  if (o.shape.n_ff_shexp) o.shape.n_ff_shexp = f.shared_ff ? f.shared_ff : o.shape.n_ff / 2;
  if (f.window >= 0) {
    if (o.shape.arch->defaults.sliding_window == 0)
      fail(ErrorKind::InvalidArgument, "--window: {} has no sliding-window layers", f.arch);
    o.shape.sliding_window = f.window;
  }
  if (f.tied && f.untied) fail(ErrorKind::InvalidArgument, "--tied and --untied exclude each other");
  if (f.tied) o.shape.tied_embeddings = true;
  if (f.untied) o.shape.tied_embeddings = false;
  o.shape.rope_scaling = parse_rope_scaling(f.rope_scaling);
  o.shape.rope_factor = f.rope_factor;
  o.shape.rope_orig_ctx = f.rope_orig_ctx;
  o.vocab_path = f.vocab;
  o.type = quantize::parse_file_type(f.type);
  o.seed = f.seed;
  o.n_vocab = f.n_vocab;
  ThreadPool pool(f.threads > 0 ? f.threads : ThreadPool::default_threads());
  const auto s = synth::synth_model(o, f.out, &pool);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("wrote {}: {} {} x{} dim {} ff {} heads {}/{}, {} tensors, {:.1f} M parameters, {:.2f} MiB "
             "({:.2f} bits/weight), {:.1f} s\n",
             f.out, f.arch, o.type.name, o.shape.n_layer, o.shape.n_embd, o.shape.n_ff, o.shape.n_head, o.shape.n_head_kv,
             s.n_tensors, s.n_params / 1e6, s.file_bytes / 1048576.0, 8.0 * s.file_bytes / s.n_params, secs);
  return 0;
}

}  // namespace

void add_synth(CLI::App& app) {
  auto f = std::make_shared<SynthFlags>();
  auto* cmd = app.add_subcommand("synth", "Write a model with seeded random weights (defaults: TinyLlama-1.1B shape)");
  cmd->add_option("--arch", f->arch, "llama, qwen2, qwen3, gemma2, gemma3, phi3, mixtral, qwen2moe, qwen3moe, olmoe or gpt-oss")->default_val("llama");
  cmd->add_option("--vocab-from", f->vocab, "GGUF whose tokenizer is copied (e.g. ../shared/vocab/*.gguf)")
      ->required();
  cmd->add_option("-o,--output", f->out, "output GGUF path")->required();
  cmd->add_option("--type", f->type, "weight type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k q4_k_m q5_k_m mxfp4_moe")
      ->default_val("f16");
  cmd->add_option("--n-vocab", f->n_vocab,
                  "tokens (default: the vocabulary's; more pads it with control tokens, e.g. 128256 for Llama 3)");
  cmd->add_option("--dim", f->dim, "embedding length (default 2048)");
  cmd->add_option("--layers", f->layers, "blocks (default 22)");
  cmd->add_option("--heads", f->heads, "query heads (default 32)");
  cmd->add_option("--kv-heads", f->kv_heads, "key/value heads (default 4)");
  cmd->add_option("--head-dim", f->head_dim, "elements per head (default dim / heads)");
  cmd->add_option("--ff", f->ff, "feed-forward length (default 5632)");
  cmd->add_option("--ctx", f->ctx, "context length (default 2048)");
  cmd->add_option("--experts", f->experts, "experts per layer, MoE families (default 8)");
  cmd->add_option("--experts-used", f->experts_used, "experts each token runs (default 2)");
  cmd->add_option("--expert-ff", f->expert_ff, "an expert's FFN width, qwen2moe/qwen3moe/gpt-oss (default ff / 4)");
  cmd->add_option("--shared-ff", f->shared_ff, "the shared expert's FFN width, qwen2moe (default ff / 2)");
  cmd->add_option("--window", f->window, "sliding window in tokens, families that have one (gemma3: default 512)");
  cmd->add_flag("--tied", f->tied, "reuse token_embd as the output matrix (default for gemma3)");
  cmd->add_flag("--untied", f->untied, "write a separate output.weight (default for the others)");
  cmd->add_option("--rope-scaling", f->rope_scaling,
                  "none, llama3 (rope_freqs.weight, Llama 3.1), yarn, longrope (phi3's factor tensors)")
      ->default_val("none");
  cmd->add_option("--rope-factor", f->rope_factor, "context extension of --rope-scaling (default 8)");
  cmd->add_option("--rope-orig-ctx", f->rope_orig_ctx, "context before the extension (default ctx / factor)");
  cmd->add_option("--seed", f->seed, "random seed (default 0)");
  cmd->add_option("-t,--threads", f->threads, "threads (default: all cores)");
  cmd->callback([f] { set_exit_code(guarded("synth", [&] { return run_synth(*f); })); });
}

}  // namespace ember::cli
