// `ember bench`: llama-bench's pp/tg throughput tests on one model, printed as llama-bench's
// markdown table (plus TTFT and the decode roofline), json or csv (src/eval/bench*.h).
//
//   ember bench -m model.gguf [-p 512] [-n 128] [-r 5] [-t N] [-ctk f16] [-ctv f16] [-d 0] [-o md]
//
// With --draft FILE or --draft-ngram N, two more rows: N tokens generated greedily after a
// prompt, plainly and speculatively, alternating, from the same state
// (eval/bench_speculative.h). The prompt is -f FILE (text: n-gram drafting only pays when the
// output copies from it) or else the pp test's kind of random tokens, -p of them.
//
//   ember bench -m big.gguf --draft small.gguf -p 0 -n 128 -f prompt.txt
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>

#include "util/thread_pool.h"
#include "backend/cpu/kernel_choice_setup.h"
#include "backend/kv_types.h"
#include "eval/bench_bandwidth.h"
#include "cli/commands.h"
#include "cli/llama_flags.h"
#include "cli/generation_flags.h"
#include "eval/bench.h"
#include "eval/bench_batched.h"
#include "eval/bench_report.h"
#include "eval/bench_speculative.h"
#include "sampling/sampler_chain.h"
#include "engine/loaded_model.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/mmap.h"

namespace ember::cli {

namespace {

struct BenchArgs {
  std::string model;
  int n_prompt = 512;
  int n_gen = 128;
  int reps = 5;
  int n_threads = 0;
  int n_depth = 0;
  int n_batch = 2048;
  int n_ubatch = 512;
  std::string ctk = "f16", ctv = "f16";
  std::string output = "md";
  bool no_warmup = false;
  bool no_repack = false;
  int gpu_layers = -1;
  DraftOptions draft;       // --draft / --draft-ngram: the speculative rows
  std::string prompt_file;  // -f: their prompt
  std::string parallel;     // -np 1,4,8,16: the concurrency table instead (eval/bench_batched.h)
  bool no_workloads = false;  // -np without the static-against-continuous rows
};

std::vector<int> parse_parallel_list(const std::string& list) {
  std::vector<int> out;
  size_t at = 0;
  while (at <= list.size()) {
    const size_t comma = std::min(list.find(',', at), list.size());
    const std::string item = list.substr(at, comma - at);
    int n = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (ec != std::errc() || end != item.data() + item.size() || n < 1 || n > 256)
      fail(ErrorKind::InvalidArgument, "-np {}: expected a comma-separated list of 1..256", list);
    out.push_back(n);
    at = comma + 1;
  }
  return out;
}

eval::BenchModelInfo describe_model(const Model& model, const std::string& path) {
  eval::BenchModelInfo info;
  info.filename = path;
  info.size = model.weight_bytes();
  for (const gguf::TensorInfo& t : model.gguf().tensors()) info.n_params += uint64_t(t.n_elements());
  std::string ftype;
  if (auto id = model.gguf().find_u32("general.file_type")) ftype = eval::llama_ftype_name(*id);
  if (ftype.empty()) {  // name the type holding the most bytes
    std::map<DType, uint64_t> bytes;
    for (const gguf::TensorInfo& t : model.gguf().tensors()) bytes[t.type] += t.nbytes;
    ftype = dtype_name(std::max_element(bytes.begin(), bytes.end(), [](auto& a, auto& b) { return a.second < b.second; })->first);
  }
  info.type = eval::model_type_label(model.hparams().arch, info.n_params, ftype);
  return info;
}

// llama-bench's "backends" field for a model whose layers run (at least partly) on `device`.
const char* backend_label(DeviceKind device) {
  switch (device) {
    case DeviceKind::Cpu: return "CPU";
    case DeviceKind::Cuda: return "CUDA";
    case DeviceKind::CudaOnCpu: return "CUDA-on-CPU";
  }
  return "?";
}

// The plain greedy and the speculative row (eval/bench_speculative.h), in their own context.
std::vector<eval::BenchRow> speculative_rows(const BenchArgs& a, const Model& model, const Tokenizer& tok,
                                             ThreadPool& pool, ContextOptions co, int n_threads) {
  const std::vector<int32_t> prompt =
      a.prompt_file.empty()
          ? eval::random_prompt(a.n_prompt > 0 ? a.n_prompt : 64, tok.n_vocab(), tok.add_bos(), tok.bos(), 1234)
          : tok.encode(read_text_file(a.prompt_file), /*add_special=*/true, /*parse_special=*/true);
  co.n_ctx = static_cast<int>(prompt.size()) + a.n_gen + 1;
  co.policy = ContextPolicy::Error;
  Context ctx(model, co, pool);
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.seed = 1;
  SamplerChain sampler(greedy, ctx.n_ctx());
  validate(a.draft);
  DraftContext draft;
  if (!a.draft.model_path.empty()) draft = load_draft_context(a.draft, ctx, tok, pool, /*verbose=*/false);
  Session session(ctx, tok, sampler, draft.context.get());
  fmt::print(stderr, "bench: tg{} after a {}-token prompt, plain and {} ({} warm-up, {} runs each, {} threads)\n",
             a.n_gen, prompt.size(), draft_source_label(a.draft), a.no_warmup ? 0 : 1, a.reps, n_threads);
  const eval::SpeculativeBenchResult r = eval::run_speculative_bench(
      session, a.draft, prompt, {.n_gen = a.n_gen, .reps = a.reps, .warmup = !a.no_warmup});
  std::vector<eval::BenchRow> rows(2);
  rows[0].result = r.plain;
  rows[1].result = r.spec;
  rows[1].speculative = r.summary;
  for (eval::BenchRow& row : rows) {
    row.n_threads = n_threads;
    row.n_batch = a.n_batch;
    row.n_ubatch = co.n_ubatch;
    row.type_k = kv_type_name(co.k_type);
    row.type_v = kv_type_name(co.v_type);
  }
  return rows;
}

// Refuses flags that contradict each other, in one line each.
void check_bench_args(const BenchArgs& a) {
  if (a.output != "md" && a.output != "json" && a.output != "csv") {
    fail(ErrorKind::InvalidArgument, "-o {}: expected md, json or csv", a.output);
  }
  if (a.n_prompt < 0 || a.n_gen < 0 || a.n_depth < 0 || a.n_prompt + a.n_gen == 0) {
    fail(ErrorKind::InvalidArgument, "-p {} -n {} -d {}: need a positive -p or -n and no negative value", a.n_prompt,
         a.n_gen, a.n_depth);
  }
  if (a.n_batch < 1 || a.n_ubatch < 1) fail(ErrorKind::InvalidArgument, "-b/-ub must be positive");
  validate(a.draft);
  if (a.draft.enabled() && a.n_gen < 1)
    fail(ErrorKind::InvalidArgument, "--draft/--draft-ngram measure generation: give -n >= 1");
  if (!a.prompt_file.empty() && !a.draft.enabled())
    fail(ErrorKind::InvalidArgument, "-f {}: the prompt file is for the speculative rows (--draft/--draft-ngram)",
         a.prompt_file);
  if (a.no_workloads && a.parallel.empty())
    fail(ErrorKind::InvalidArgument, "--no-workloads skips rows of -np: give -np too");
}

// -np: batched decoding at each sequence count, then (unless --no-workloads) the
// static-against-continuous workloads.
int run_parallel_bench(const BenchArgs& a, const Model& model, ThreadPool& pool, const ContextOptions& co,
                       int n_threads) {
  if (a.n_prompt < 1 || a.n_gen < 1) fail(ErrorKind::InvalidArgument, "-np needs -p and -n of at least 1");
  std::vector<eval::BatchedRow> rows;
  for (int n_seq : parse_parallel_list(a.parallel)) {
    fmt::print(stderr, "bench: {} sequences x pp{} + tg{} ({} runs, {} threads)\n", n_seq, a.n_prompt, a.n_gen, a.reps,
               n_threads);
    rows.push_back(eval::run_batched(model, pool, co, n_seq, a.n_prompt, a.n_gen, a.reps, 1234));
  }
  std::vector<eval::WorkloadRow> workloads;
  for (const eval::LengthMix mix : {eval::LengthMix::Uniform, eval::LengthMix::LongTail}) {
    if (a.no_workloads) break;
    fmt::print(stderr, "bench: workload of {} lengths, static against continuous batching\n",
               eval::length_mix_name(mix));
    workloads.push_back(eval::run_workload(model, pool, co, rows.back().n_seq, a.n_prompt, a.n_gen, mix, 99));
  }
  fmt::print("{}", eval::format_batched_markdown(rows, workloads));
  return 0;
}

// llama-bench's pp and tg rows, each with its roofline.
std::vector<eval::BenchRow> test_rows(const BenchArgs& a, const Model& model, const Tokenizer& tok, ThreadPool& pool,
                                      const ContextOptions& co, int n_threads) {
  std::vector<eval::BenchTest> tests;
  if (a.n_prompt > 0) tests.push_back({a.n_prompt, 0, a.n_depth});
  if (a.n_gen > 0) tests.push_back({0, a.n_gen, a.n_depth});
  Context ctx(model, co, pool);
  eval::BenchOptions bo;
  bo.reps = a.reps;
  bo.n_batch = a.n_batch;
  bo.warmup = !a.no_warmup;
  std::vector<eval::BenchRow> rows;
  const bool all_on_device = model.device() != DeviceKind::Cpu && model.placement().first_device_layer == 0;
  eval::BenchBandwidth bandwidth(all_on_device ? model.device() : DeviceKind::Cpu, pool);
  for (const eval::BenchTest& t : tests) {
    fmt::print(stderr, "bench: {} ({} warm-up, {} runs, {} threads)\n", t.name(), bo.warmup ? 1 : 0, bo.reps, n_threads);
    eval::BenchRow row;
    // Decode tests get the bandwidth read between their tokens (eval/bench_bandwidth.h).
    eval::BenchOptions test_opts = bo;
    if (t.n_gen > 0 && t.n_prompt == 0)
      test_opts.read_bandwidth = [&](double seconds) { return bandwidth.read(seconds); };
    row.result = eval::run_bench_test(ctx, t, test_opts, tok.add_bos(), tok.bos());
    row.n_threads = n_threads;
    row.n_batch = a.n_batch;
    row.n_ubatch = co.n_ubatch;
    row.type_k = kv_type_name(co.k_type);
    row.type_v = kv_type_name(co.v_type);
    row.bandwidth_name = bandwidth.name();
    row.bandwidth_patterns = bandwidth.pattern_names();
    if (t.n_gen > 0) {
      // Mean cache length over the decode steps: depth, then 0 .. n_gen - 1 new tokens.
      const int64_t mean_kv = t.n_depth + (t.n_gen - 1) / 2;
      row.decode_bytes = eval::decode_bytes_per_token(model, mean_kv, ctx.kv_bytes_per_token());
    }
    rows.push_back(row);
  }
  return rows;
}

int run_bench(BenchArgs& a) {
  check_bench_args(a);
  const int n_threads = a.n_threads > 0 ? a.n_threads : ThreadPool::default_threads();
  LoadOptions lo;
  lo.n_threads = n_threads;
  lo.print_plan = false;
  lo.repack = !a.no_repack;
  lo.gpu_layers = a.gpu_layers;
  auto model = Model::load(a.model, lo);
  const Tokenizer tok = Tokenizer::from_gguf(model->gguf());

  ContextOptions co;
  co.n_ctx = a.n_depth + std::max(a.n_prompt, a.n_gen);
  co.n_batch = a.n_batch;
  co.n_ubatch = std::min(a.n_ubatch, a.n_batch);
  co.k_type = parse_kv_type(a.ctk, "-ctk");
  co.v_type = parse_kv_type(a.ctv, "-ctv");
  co.print_plan = false;
  ThreadPool pool(n_threads);
  const cpu::KernelChoiceReport kernels = choose_cpu_kernels(pool, *model, /*verbose=*/true);
  for (const std::string& line : kernels.lines()) fmt::print(stderr, "bench: {}\n", line);
  if (!a.parallel.empty()) return run_parallel_bench(a, *model, pool, co, n_threads);

  const eval::BenchModelInfo info = describe_model(*model, std::filesystem::path(a.model).filename().string());
  std::vector<eval::BenchRow> rows = test_rows(a, *model, tok, pool, co, n_threads);
  if (a.draft.enabled()) {
    std::vector<eval::BenchRow> spec = speculative_rows(a, *model, tok, pool, co, n_threads);
    for (eval::BenchRow& r : spec) rows.push_back(std::move(r));
  }
  for (eval::BenchRow& r : rows) r.backend = backend_label(model->device());
  if (a.output == "json") {
    fmt::print("{}", eval::format_json(info, rows));
  } else if (a.output == "csv") {
    fmt::print("{}", eval::format_csv(info, rows, true));
  } else {
    fmt::print("{}\n{}", eval::format_markdown(info, rows, true), eval::format_notes(rows));
  }
  return 0;
}

}  // namespace

void add_bench(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Prompt (pp) and generation (tg) throughput, like llama-bench");
  cmd->add_option("-m,--model", args->model, "GGUF model file")->required();
  cmd->add_option("-p,--n-prompt", args->n_prompt, "prompt tokens of the pp test (0: skip)")->capture_default_str();
  cmd->add_option("-n,--n-gen", args->n_gen, "decode steps of the tg test (0: skip)")->capture_default_str();
  cmd->add_option("-r,--repetitions", args->reps, "timed runs per test")->capture_default_str();
  cmd->add_option("-t,--threads", args->n_threads, "threads (0: physical cores)");
  add_no_repack_flag(cmd, args->no_repack);
  add_gpu_layers_flag(cmd, args->gpu_layers);
  cmd->add_option("--parallel", args->parallel,
                  "-np 1,4,8,16: aggregate decode t/s and inter-token latency at each concurrency (-p, -n per "
                  "sequence), and static against continuous batching");
  cmd->add_flag("--no-workloads", args->no_workloads,
                "with -np: skip the static-against-continuous workloads (minutes on a small CPU)");
  cmd->add_option("-d,--n-depth", args->n_depth, "tokens in the KV cache before each test")->capture_default_str();
  cmd->add_option("-b,--batch-size", args->n_batch, "tokens per decode call")->capture_default_str();
  cmd->add_option("--ubatch-size", args->n_ubatch, "tokens per forward pass")->capture_default_str();
  add_kv_type_flags(cmd, args->ctk, args->ctv);
  cmd->add_option("-o,--output", args->output, "md, json or csv")->capture_default_str();
  cmd->add_flag("--no-warmup", args->no_warmup, "skip the warm-up run");
  add_draft_flags(cmd, args->draft);
  cmd->add_option("-f,--file", args->prompt_file,
                  "prompt text for the --draft/--draft-ngram rows (default: -p random tokens)");
  cmd->callback([args] {
    set_exit_code(guarded("bench", [&] { return run_bench(*args); }));
  });
}

}  // namespace ember::cli
