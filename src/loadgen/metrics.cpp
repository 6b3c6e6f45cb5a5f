#include "loadgen/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "util/error.h"
#include "util/percentile.h"

namespace ember::loadgen {

Stats stats_of(std::vector<double> values) {
  Stats s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(s.count);
  double sq = 0;
  for (double v : values) sq += (v - s.mean) * (v - s.mean);
  s.std = std::sqrt(sq / static_cast<double>(s.count));
  s.median = percentile(values, 0.5);
  s.p90 = percentile(values, 0.9);
  s.p99 = percentile(values, 0.99);
  return s;
}

Slo parse_slo(std::string_view spec) {
  Slo slo;
  const auto bad = [&](std::string_view why) {
    fail(ErrorKind::InvalidArgument, "--slo {}: {} (expected ttft:MS,tpot:MS,e2el:MS)", spec, why);
  };
  for (size_t start = 0; start <= spec.size();) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string_view item = spec.substr(start, comma - start);
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) bad("an item has no ':'");
    const std::string_view key = item.substr(0, colon);
    const std::string value(item.substr(colon + 1));
    size_t used = 0;
    double ms = -1;
    try {
      ms = std::stod(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != value.size() || !(ms >= 0)) bad("a value is not a number of milliseconds >= 0");
    double* field = key == "ttft" ? &slo.ttft_ms : key == "tpot" ? &slo.tpot_ms : key == "e2el" ? &slo.e2el_ms : nullptr;
    if (!field) bad("the metrics are ttft, tpot and e2el");
    *field = ms;
    start = comma + 1;
  }
  return slo;
}

bool meets_slo(const RequestResult& r, const Slo& slo) {
  const auto within = [](double seconds, double limit_ms) { return limit_ms < 0 || seconds * 1e3 <= limit_ms; };
  return r.ok() && within(r.ttft_s, slo.ttft_ms) && within(r.tpot_s(), slo.tpot_ms) && within(r.e2e_s, slo.e2el_ms);
}

namespace {

void count_failure(Summary& s, Failure f) {
  ++s.failed;
  if (f == Failure::Busy) ++s.failed_busy;
  if (f == Failure::Transport) ++s.failed_transport;
  if (f == Failure::Status) ++s.failed_status;
  if (f == Failure::Stream) ++s.failed_stream;
}

}  // namespace

Summary summarize(const std::vector<RequestResult>& results, const std::vector<int>& approx_prompt_tokens,
                  double duration_s, int peak_concurrency, const Slo& slo) {
  Summary s;
  s.duration_s = duration_s;
  s.peak_concurrency = peak_concurrency;
  s.has_slo = slo.any();
  std::vector<double> ttft, tpot, itl, e2el;
  for (size_t i = 0; i < results.size(); ++i) {
    const RequestResult& r = results[i];
    if (!r.ok()) {
      count_failure(s, r.failure);
      continue;
    }
    ++s.completed;
    if (r.prompt_tokens < 0) ++s.usage_missing;
    s.input_tokens += r.prompt_tokens >= 0 ? r.prompt_tokens : approx_prompt_tokens.at(i);
    s.output_tokens += r.output_tokens;
    ttft.push_back(r.ttft_s * 1e3);
    if (r.output_tokens > 1) tpot.push_back(r.tpot_s() * 1e3);
    for (double gap : r.itl_s) itl.push_back(gap * 1e3);
    e2el.push_back(r.e2e_s * 1e3);
    if (s.has_slo && meets_slo(r, slo)) ++s.good;
  }
  s.ttft_ms = stats_of(std::move(ttft));
  s.tpot_ms = stats_of(std::move(tpot));
  s.itl_ms = stats_of(std::move(itl));
  s.e2el_ms = stats_of(std::move(e2el));
  if (duration_s > 0) {
    s.request_throughput = static_cast<double>(s.completed) / duration_s;
    s.input_throughput = static_cast<double>(s.input_tokens) / duration_s;
    s.output_throughput = static_cast<double>(s.output_tokens) / duration_s;
    s.total_token_throughput = static_cast<double>(s.input_tokens + s.output_tokens) / duration_s;
    s.goodput = static_cast<double>(s.good) / duration_s;
  }
  return s;
}

}  // namespace ember::loadgen
