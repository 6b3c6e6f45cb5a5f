// `ember bench-serve URL`: a load generator for OpenAI-compatible servers (ember serve,
// llama-server, vLLM), measuring them as vLLM's benchmark_serving does.
//
//   ember bench-serve http://127.0.0.1:8080 --num-prompts 64 --max-concurrency 16
//                     --input-len 60 --output-len 64 [--request-rate inf] [--slo ttft:2000,tpot:200] [--json out.json]
//
// Requests arrive by a seeded gamma process (--request-rate, --burstiness; loadgen/arrivals.h),
// at most --max-concurrency in flight, each streaming (loadgen/stream_client.h). Prompts are
// synthetic (seeded random one-token words, --input-len of them; loadgen/word_list.h) or the
// lines of --prompts FILE (which may also ask for a whole answer, "stream": false, and set a
// "session" sent as X-Session-ID, for load balancers' affinity). The report (markdown on stdout, JSON with --json) has throughput,
// TTFT/TPOT/ITL/E2EL distributions, failures by kind, peak concurrency and goodput. Exit 3
// when no request succeeded.
#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include "cli/commands.h"
#include "loadgen/arrivals.h"
#include "loadgen/report.h"
#include "loadgen/runner.h"
#include "loadgen/stream_client.h"
#include "loadgen/workload.h"
#include "util/error.h"
#include "util/progress.h"

namespace ember::cli {
namespace {

using namespace ember::loadgen;

struct BenchServeFlags {
  std::string url, endpoint = "/v1/completions", model, prompts, slo, api_key, json_out;
  int num_prompts = 64, max_concurrency = 0, input_len = 60, output_len = 64;
  std::string request_rate = "inf";
  double burstiness = 1.0, range_ratio = 0.0, timeout_s = 600;
  uint64_t seed = 0;
  bool num_prompts_given = false, input_len_given = false, range_ratio_given = false;
};

double parse_rate(const std::string& text) {
  if (text == "inf") return INFINITY;
  size_t used = 0;
  double rate = 0;
  try {
    rate = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  if (used != text.size() || !(rate > 0)) fail(ErrorKind::InvalidArgument, "--request-rate {}: a number > 0 or inf", text);
  return rate;
}

std::vector<WorkItem> workload(const BenchServeFlags& f) {
  if (f.prompts.empty())
    return synthetic_workload({f.num_prompts, f.input_len, f.output_len, f.range_ratio, f.seed});
  if (f.input_len_given || f.range_ratio_given)
    fail(ErrorKind::InvalidArgument, "--input-len and --range-ratio are for synthetic prompts, not --prompts");
  if (f.output_len < 1) fail(ErrorKind::InvalidArgument, "--output-len {} must be at least 1", f.output_len);
  return read_prompts_file(f.prompts, f.output_len, f.num_prompts_given ? f.num_prompts : 0);
}

nlohmann::json config_of(const BenchServeFlags& f, const Target& target, size_t n) {
  nlohmann::json c = {{"url", target.origin + target.path},   {"num_prompts", n},
                      {"request_rate", f.request_rate},       {"burstiness", f.burstiness},
                      {"max_concurrency", f.max_concurrency}, {"output_len", f.output_len},
                      {"seed", f.seed}};
  if (!f.model.empty()) c["model"] = f.model;
  if (f.prompts.empty()) {
    c["input_len"] = f.input_len;
    c["range_ratio"] = f.range_ratio;
  } else {
    c["prompts"] = f.prompts;
  }
  if (!f.slo.empty()) c["slo"] = f.slo;
  return c;
}

int run_bench_serve(const BenchServeFlags& f) {
  if (f.num_prompts < 1) fail(ErrorKind::InvalidArgument, "--num-prompts {} must be at least 1", f.num_prompts);
  if (f.max_concurrency < 0) fail(ErrorKind::InvalidArgument, "--max-concurrency {} must be >= 0 (0: no cap)", f.max_concurrency);
  if (!(f.timeout_s > 0)) fail(ErrorKind::InvalidArgument, "--timeout {} must be > 0 seconds", f.timeout_s);
  const Slo slo = f.slo.empty() ? Slo{} : parse_slo(f.slo);
  const Endpoint endpoint = parse_endpoint(f.endpoint);
  const Target target = make_target(f.url, f.endpoint, f.api_key);
  const std::vector<WorkItem> items = workload(f);
  std::vector<std::string> bodies;
  std::vector<Exchange> exchanges;
  std::vector<int> approx_tokens;
  for (const WorkItem& item : items) {
    bodies.push_back(request_body(item, endpoint, f.model).dump());
    exchanges.push_back({item.stream, item.session});
    approx_tokens.push_back(item.approx_prompt_tokens);
  }
  const std::vector<double> arrivals =
      arrival_times(static_cast<int>(items.size()), {parse_rate(f.request_rate), f.burstiness, f.seed});

  ProgressBar bar("bench-serve");
  const RunOutcome run = run_schedule(
      arrivals, f.max_concurrency, [&](size_t i) { return post_completion(target, bodies[i], f.timeout_s, exchanges[i]); },
      [&](size_t done) { bar.update(static_cast<float>(done) / static_cast<float>(bodies.size())); });
  bar.finish();

  const Summary summary = summarize(run.results, approx_tokens, run.duration_s, run.peak_concurrency, slo);
  const nlohmann::json config = config_of(f, target, items.size());
  fmt::print("{}", markdown_report(summary, config, run.results));
  std::fflush(stdout);
  if (!f.json_out.empty()) {
    std::ofstream out(f.json_out);
    out << json_report(summary, config, run.results).dump(2) << '\n';
    if (!out) fail(ErrorKind::Io, "cannot write {}", f.json_out);
  }
  if (summary.completed == 0) fail(ErrorKind::Io, "no request succeeded; the first: {}", run.results.front().error);
  return 0;
}

}  // namespace

void add_bench_serve(CLI::App& app) {
  auto f = std::make_shared<BenchServeFlags>();
  CLI::App* cmd = app.add_subcommand("bench-serve", "Load-test an OpenAI-compatible server (vLLM benchmark_serving's method)");
  cmd->add_option("url", f->url, "server base URL, e.g. http://127.0.0.1:8080")->required();
  cmd->add_option("--endpoint", f->endpoint, "/v1/completions or /v1/chat/completions")->capture_default_str();
  cmd->add_option("--model", f->model, "the request's \"model\" field (left out when empty)");
  cmd->add_option("--num-prompts", f->num_prompts, "requests to send (with --prompts: default every line)")
      ->capture_default_str()
      ->each([f](const std::string&) { f->num_prompts_given = true; });
  cmd->add_option("--request-rate", f->request_rate, "mean arrivals per second, or inf: all at once")->capture_default_str();
  cmd->add_option("--burstiness", f->burstiness, "gamma shape of the gaps (1: Poisson, < 1 burstier)")->capture_default_str();
  cmd->add_option("--max-concurrency", f->max_concurrency, "most requests in flight (0: no cap)")->capture_default_str();
  cmd->add_option("--input-len", f->input_len, "words per synthetic prompt (~tokens on llama vocabularies)")
      ->capture_default_str()
      ->each([f](const std::string&) { f->input_len_given = true; });
  cmd->add_option("--output-len", f->output_len, "max_tokens per request (exactly, ignore_eos)")->capture_default_str();
  cmd->add_option("--range-ratio", f->range_ratio, "lengths uniform in [len*(1-X), len*(1+X)]")
      ->capture_default_str()
      ->each([f](const std::string&) { f->range_ratio_given = true; });
  cmd->add_option("--prompts", f->prompts, "JSON lines with \"prompt\" or \"messages\" (optional \"max_tokens\")");
  cmd->add_option("--seed", f->seed, "seed of the prompts and arrivals")->capture_default_str();
  cmd->add_option("--slo", f->slo, "goodput objectives, e.g. ttft:2000,tpot:100,e2el:10000 (ms)");
  cmd->add_option("--api-key", f->api_key, "sent as a bearer token")->envname("OPENAI_API_KEY");
  cmd->add_option("--json", f->json_out, "also write the report (with every request) as JSON here");
  cmd->add_option("--timeout", f->timeout_s, "seconds a request may take before it fails")->capture_default_str();
  cmd->callback([f] { set_exit_code(guarded("bench-serve", [&] { return run_bench_serve(*f); })); });
}

}  // namespace ember::cli
