// The numbers vLLM's benchmark_serving reports, from the per-request results: throughput
// over the run's duration, and TTFT / TPOT / ITL / end-to-end latency distributions; with
// SLOs, goodput = requests meeting every SLO per second.
#pragma once
#include <string_view>
#include <vector>

#include "loadgen/stream_recorder.h"

namespace ember::loadgen {

struct Stats {
  size_t count = 0;
  double mean = 0, median = 0, std = 0, p90 = 0, p99 = 0;  // all 0 when count is 0
};

// std is the population standard deviation (numpy's default, as vLLM reports it).
Stats stats_of(std::vector<double> values);

// Service-level objectives in milliseconds; a negative value is no objective.
struct Slo {
  double ttft_ms = -1, tpot_ms = -1, e2el_ms = -1;
  bool any() const { return ttft_ms >= 0 || tpot_ms >= 0 || e2el_ms >= 0; }
};
// "ttft:MS,tpot:MS,e2el:MS", any subset in any order; Error(InvalidArgument) otherwise.
Slo parse_slo(std::string_view spec);
bool meets_slo(const RequestResult& r, const Slo& slo);

struct Summary {
  size_t completed = 0, failed = 0;
  size_t failed_busy = 0, failed_transport = 0, failed_status = 0, failed_stream = 0;
  size_t usage_missing = 0;  // successes whose server sent no usage (input tokens estimated)
  double duration_s = 0;
  long long input_tokens = 0, output_tokens = 0;
  double request_throughput = 0, input_throughput = 0, output_throughput = 0, total_token_throughput = 0;
  Stats ttft_ms, tpot_ms, itl_ms, e2el_ms;
  int peak_concurrency = 0;
  bool has_slo = false;
  size_t good = 0;
  double goodput = 0;  // good requests per second
};

// `approx_prompt_tokens[i]` stands in for request i's prompt tokens when its server sent no usage.
Summary summarize(const std::vector<RequestResult>& results, const std::vector<int>& approx_prompt_tokens,
                  double duration_s, int peak_concurrency, const Slo& slo);

}  // namespace ember::loadgen
