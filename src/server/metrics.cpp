#include "server/metrics.h"

#include <fmt/format.h>

#include <algorithm>

namespace ember::server {

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1) {}

void Histogram::observe(double value) {
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  counts_[bucket] += 1;
  sum_ += value;
  count_ += 1;
}

void Histogram::render(std::string& out, const char* name, const char* help) const {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name, sum_, name, count_);
}

ServerMetrics::ServerMetrics()
    : ttft_({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80}),
      itl_({0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12}) {}

void ServerMetrics::observe_ttft(double seconds) {
  std::lock_guard lock(mu_);
  ttft_.observe(seconds);
}

void ServerMetrics::observe_itl(double seconds) {
  std::lock_guard lock(mu_);
  itl_.observe(seconds);
}

void ServerMetrics::count_response(int http_status) {
  std::lock_guard lock(mu_);
  auto it = std::find_if(responses_.begin(), responses_.end(), [&](const auto& p) { return p.first == http_status; });
  if (it == responses_.end()) responses_.emplace_back(http_status, 1);
  else it->second += 1;
}

void write_metric(std::string& out, std::string_view name, const char* type, const char* help, double value,
                  std::string_view labels) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{}{} {}\n", name, help, name, type, name, labels, value);
}

namespace {

void kv_gauges(std::string& out, const std::vector<KVBlockStats>& groups) {
  const std::pair<const char*, int KVBlockStats::*> fields[] = {
      {"used", &KVBlockStats::used}, {"cached", &KVBlockStats::cached}, {"free", &KVBlockStats::free}};
  for (const auto& [what, field] : fields) {
    out += fmt::format("# HELP ember_kv_blocks_{} KV cache blocks {} (cached: unowned, kept for prefix hits)\n",
                       what, what);
    out += fmt::format("# TYPE ember_kv_blocks_{} gauge\n", what);
    for (const KVBlockStats& g : groups) out += fmt::format("ember_kv_blocks_{}{{window=\"{}\"}} {}\n", what, g.window, g.*field);
  }
}

}  // namespace

std::string ServerMetrics::render(const EngineSnapshot& e) const {
  std::string out;
  write_metric(out, "ember_requests_running", "gauge", "Sequences being computed", e.running);
  write_metric(out, "ember_requests_waiting", "gauge", "Requests queued for a sequence slot", e.waiting);
  write_metric(out, "ember_prompt_tokens_total", "counter", "Prompt tokens scheduled, recomputations included", double(e.scheduler.prompt_tokens));
  write_metric(out, "ember_generation_tokens_total", "counter", "Tokens generated", double(e.scheduler.generated_tokens));
  write_metric(out, "ember_prefix_cache_hit_tokens_total", "counter", "Prompt tokens found in the prefix cache", double(e.scheduler.cached_tokens));
  write_metric(out, "ember_prefix_cache_hit_rate", "gauge", "Share of prompt tokens found in the prefix cache",
         e.scheduler.prompt_tokens > 0 ? double(e.scheduler.cached_tokens) / double(e.scheduler.prompt_tokens) : 0.0);
  write_metric(out, "ember_preemptions_total", "counter", "Sequences preempted for lack of KV blocks", double(e.scheduler.preemptions));
  write_metric(out, "ember_draft_tokens_total", "counter", "Speculatively drafted tokens verified (--draft-ngram or --draft)",
         double(e.scheduler.drafted_tokens));
  write_metric(out, "ember_draft_accepted_tokens_total", "counter", "Drafted tokens accepted", double(e.scheduler.accepted_tokens));
  kv_gauges(out, e.kv);
  std::lock_guard lock(mu_);
  ttft_.render(out, "ember_time_to_first_token_seconds", "From request arrival to the first generated token");
  itl_.render(out, "ember_inter_token_latency_seconds", "Between successive generated tokens of one request");
  out += "# HELP ember_http_responses_total HTTP responses by status\n"
         "# TYPE ember_http_responses_total counter\n";
  for (const auto& [status, n] : responses_) out += fmt::format("ember_http_responses_total{{status=\"{}\"}} {}\n", status, n);
  return out;
}

}  // namespace ember::server
