#include "loadgen/report.h"

#include <fmt/format.h>

namespace ember::loadgen {
namespace {

struct NamedStats {
  const char* key;    // JSON infix: mean_<key>_ms
  const char* label;  // markdown row
  const Stats* stats;
};

std::vector<NamedStats> latency_rows(const Summary& s) {
  return {{"ttft", "TTFT (time to first token)", &s.ttft_ms},
          {"tpot", "TPOT (time per output token, excl. 1st)", &s.tpot_ms},
          {"itl", "ITL (inter-token latency)", &s.itl_ms},
          {"e2el", "E2EL (end-to-end latency)", &s.e2el_ms}};
}

std::string first_error(const std::vector<RequestResult>& results) {
  for (const RequestResult& r : results)
    if (!r.ok()) return r.error;
  return {};
}

std::string config_line(const nlohmann::json& config) {
  std::string line;
  for (const auto& [key, value] : config.items()) {
    if (key == "url") continue;  // it heads the report
    line += fmt::format("{}{}={}", line.empty() ? "" : " ", key, value.is_string() ? value.get<std::string>() : value.dump());
  }
  return line;
}

}  // namespace

std::string markdown_report(const Summary& s, const nlohmann::json& config, const std::vector<RequestResult>& results) {
  std::string out = fmt::format("## bench-serve {}\n\n{}\n\n| metric | value |\n| --- | ---: |\n",
                                config.value("url", ""), config_line(config));
  const auto row = [&](const std::string& name, const std::string& value) { out += fmt::format("| {} | {} |\n", name, value); };
  row("successful requests", std::to_string(s.completed));
  row("failed requests", fmt::format("{} (503: {}, transport: {}, other status: {}, stream: {})", s.failed,
                                     s.failed_busy, s.failed_transport, s.failed_status, s.failed_stream));
  row("benchmark duration (s)", fmt::format("{:.2f}", s.duration_s));
  row("peak concurrent requests", std::to_string(s.peak_concurrency));
  row("total input tokens", fmt::format("{}{}", s.input_tokens,
                                        s.usage_missing ? fmt::format(" ({} estimated: no usage)", s.usage_missing) : ""));
  row("total output tokens", std::to_string(s.output_tokens));
  row("request throughput (req/s)", fmt::format("{:.2f}", s.request_throughput));
  row("input token throughput (tok/s)", fmt::format("{:.2f}", s.input_throughput));
  row("output token throughput (tok/s)", fmt::format("{:.2f}", s.output_throughput));
  row("total token throughput (tok/s)", fmt::format("{:.2f}", s.total_token_throughput));
  if (s.has_slo) row("goodput (req/s meeting every SLO)", fmt::format("{:.2f} ({} of {})", s.goodput, s.good, results.size()));

  out += "\n| latency (ms) | mean | median | std | p90 | p99 |\n| --- | ---: | ---: | ---: | ---: | ---: |\n";
  for (const NamedStats& n : latency_rows(s))
    out += fmt::format("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", n.label, n.stats->mean, n.stats->median,
                       n.stats->std, n.stats->p90, n.stats->p99);
  if (s.failed) out += fmt::format("\nfirst error: {}\n", first_error(results));
  return out;
}

nlohmann::json json_report(const Summary& s, const nlohmann::json& config, const std::vector<RequestResult>& results) {
  nlohmann::json j = {
      {"config", config},
      {"completed", s.completed},
      {"failed", s.failed},
      {"failed_503", s.failed_busy},
      {"failed_transport", s.failed_transport},
      {"failed_status", s.failed_status},
      {"failed_stream", s.failed_stream},
      {"duration", s.duration_s},
      {"max_concurrent_requests", s.peak_concurrency},
      {"total_input_tokens", s.input_tokens},
      {"total_output_tokens", s.output_tokens},
      {"input_tokens_estimated", s.usage_missing},
      {"request_throughput", s.request_throughput},
      {"input_throughput", s.input_throughput},
      {"output_throughput", s.output_throughput},
      {"total_token_throughput", s.total_token_throughput},
      {"request_goodput", s.has_slo ? nlohmann::json(s.goodput) : nlohmann::json(nullptr)},
  };
  for (const NamedStats& n : latency_rows(s)) {
    j[fmt::format("mean_{}_ms", n.key)] = n.stats->mean;
    j[fmt::format("median_{}_ms", n.key)] = n.stats->median;
    j[fmt::format("std_{}_ms", n.key)] = n.stats->std;
    j[fmt::format("p90_{}_ms", n.key)] = n.stats->p90;
    j[fmt::format("p99_{}_ms", n.key)] = n.stats->p99;
  }
  nlohmann::json& requests = j["requests"] = nlohmann::json::array();
  for (const RequestResult& r : results) {
    nlohmann::json itl = nlohmann::json::array();
    for (double gap : r.itl_s) itl.push_back(gap * 1e3);
    requests.push_back({{"status", r.status},
                        {"failure", failure_name(r.failure)},
                        {"error", r.error},
                        {"input_tokens", r.prompt_tokens},
                        {"output_tokens", r.output_tokens},
                        {"ttft_ms", r.ttft_s * 1e3},
                        {"tpot_ms", r.tpot_s() * 1e3},
                        {"e2el_ms", r.e2e_s * 1e3},
                        {"itl_ms", std::move(itl)}});
  }
  return j;
}

}  // namespace ember::loadgen
