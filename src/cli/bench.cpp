// `ember bench`: llama-bench's pp/tg throughput tests on one model, printed as llama-bench's
// markdown table (plus TTFT and the decode roofline), json or csv (src/eval/bench*.h).
//
//   ember bench -m model.gguf [-p 512] [-n 128] [-r 5] [-t N] [-ctk f16] [-ctv f16] [-d 0] [-o md]
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "backend/cpu/thread_pool.h"
#include "cli/commands.h"
#include "eval/bench.h"
#include "eval/bench_report.h"
#include "engine/loaded_model.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/membw.h"

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
};

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

int run_bench(BenchArgs& a) {
  if (a.output != "md" && a.output != "json" && a.output != "csv") {
    fail(ErrorKind::InvalidArgument, "-o {}: expected md, json or csv", a.output);
  }
  if (a.n_prompt < 0 || a.n_gen < 0 || a.n_depth < 0 || a.n_prompt + a.n_gen == 0) {
    fail(ErrorKind::InvalidArgument, "-p {} -n {} -d {}: need a positive -p or -n and no negative value", a.n_prompt,
         a.n_gen, a.n_depth);
  }
  if (a.n_batch < 1 || a.n_ubatch < 1) fail(ErrorKind::InvalidArgument, "-b/-ub must be positive");
  const int n_threads = a.n_threads > 0 ? a.n_threads : ThreadPool::default_threads();
  LoadOptions lo;
  lo.n_threads = n_threads;
  lo.print_plan = false;
  auto model = Model::load(a.model, lo);
  const Tokenizer tok = Tokenizer::from_gguf(model->gguf());

  std::vector<eval::BenchTest> tests;
  if (a.n_prompt > 0) tests.push_back({a.n_prompt, 0, a.n_depth});
  if (a.n_gen > 0) tests.push_back({0, a.n_gen, a.n_depth});

  ContextOptions co;
  co.n_ctx = a.n_depth + std::max(a.n_prompt, a.n_gen);
  co.n_batch = a.n_batch;
  co.n_ubatch = std::min(a.n_ubatch, a.n_batch);
  co.k_type = parse_kv_type(a.ctk, "-ctk");
  co.v_type = parse_kv_type(a.ctv, "-ctv");
  co.print_plan = false;
  ThreadPool pool(n_threads);
  Context ctx(*model, co, pool);

  eval::BenchOptions bo;
  bo.reps = a.reps;
  bo.n_batch = a.n_batch;
  bo.warmup = !a.no_warmup;
  const eval::BenchModelInfo info = describe_model(*model, std::filesystem::path(a.model).filename().string());
  std::vector<eval::BenchRow> rows;
  double bandwidth = 0;
  for (const eval::BenchTest& t : tests) {
    fmt::print(stderr, "bench: {} ({} warm-up, {} runs, {} threads)\n", t.name(), bo.warmup ? 1 : 0, bo.reps, n_threads);
    eval::BenchRow row;
    row.result = eval::run_bench_test(ctx, t, bo, tok.add_bos(), tok.bos());
    row.n_threads = n_threads;
    row.n_batch = a.n_batch;
    row.n_ubatch = co.n_ubatch;
    row.type_k = dtype_name(co.k_type);
    row.type_v = dtype_name(co.v_type);
    std::transform(row.type_k.begin(), row.type_k.end(), row.type_k.begin(), ::tolower);
    std::transform(row.type_v.begin(), row.type_v.end(), row.type_v.begin(), ::tolower);
    if (t.n_gen > 0) {
      // Mean cache length over the decode steps: depth, then 0 .. n_gen - 1 new tokens.
      const int64_t mean_kv = t.n_depth + (t.n_gen - 1) / 2;
      row.decode_bytes = eval::decode_bytes_per_token(*model, mean_kv, ctx.kv_bytes_per_token());
      // Measured once, with the benchmark's threads, on a buffer far above the caches.
      if (bandwidth == 0) bandwidth = measure_read_bandwidth(pool, size_t{256} << 20, 5).gb_per_s * 1e9;
      row.mem_bw = bandwidth;
    }
    rows.push_back(row);
  }
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
  cmd->add_option("-d,--n-depth", args->n_depth, "tokens in the KV cache before each test")->capture_default_str();
  cmd->add_option("-b,--batch-size", args->n_batch, "tokens per decode call")->capture_default_str();
  cmd->add_option("--ubatch-size", args->n_ubatch, "tokens per forward pass")->capture_default_str();
  cmd->add_option("--cache-type-k", args->ctk, "KV cache K type (-ctk): f32, f16, q8_0, q4_0")->capture_default_str();
  cmd->add_option("--cache-type-v", args->ctv, "KV cache V type (-ctv)")->capture_default_str();
  cmd->add_option("-o,--output", args->output, "md, json or csv")->capture_default_str();
  cmd->add_flag("--no-warmup", args->no_warmup, "skip the warm-up run");
  cmd->callback([args] {
    set_exit_code(guarded("bench", [&] { return run_bench(*args); }));
  });
}

}  // namespace ember::cli
