#include "server/metrics_routing.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/error.h"

namespace ember::server {
namespace {

int total_blocks(const std::vector<KVBlockStats>& groups) {
  int n = 0;
  for (const KVBlockStats& g : groups) n += g.total;
  return n;
}

// A Prometheus label value: backslash, quote and newline escaped.
std::string label_value(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

void ember_names(std::string& out, const EngineSnapshot& e) {
  write_metric(out, "ember_kv_cache_usage_perc", "gauge", "KV-cache usage in 0..1 (blocks owned by sequences)",
               kv_cache_usage(e.kv));
  write_metric(out, "ember_cache_config_info", "gauge", "The KV cache's shape in labels: tokens per block, blocks", 1,
               fmt::format("{{block_size=\"{}\",num_gpu_blocks=\"{}\"}}", e.kv_block_size, total_blocks(e.kv)));
  write_metric(out, "ember_prefix_cache_queries_total", "counter", "Tokens looked up in the prefix cache",
               double(e.scheduler.prefix_lookup_tokens));
  write_metric(out, "ember_prefix_cache_hits_total", "counter", "Tokens of those lookups found in the prefix cache",
               double(e.scheduler.cached_tokens));
}

// vLLM (v1 engine) names and label sets, as its /metrics has them.
void vllm_names(std::string& out, const EngineSnapshot& e, const std::string& model) {
  const std::string labels = fmt::format("{{engine=\"0\",model_name=\"{}\"}}", label_value(model));
  const double usage = kv_cache_usage(e.kv);
  write_metric(out, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", e.running, labels);
  write_metric(out, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", e.waiting, labels);
  write_metric(out, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", usage, labels);
  // The name before vLLM 0.10; older endpoint pickers and routers read it.
  write_metric(out, "vllm:gpu_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", usage, labels);
  write_metric(out, "vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.",
               double(e.scheduler.prefix_lookup_tokens), labels);
  write_metric(out, "vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.",
               double(e.scheduler.cached_tokens), labels);
  write_metric(out, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
               double(e.scheduler.prompt_tokens), labels);
  write_metric(out, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
               double(e.scheduler.generated_tokens), labels);
  write_metric(out, "vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.",
               double(e.scheduler.preemptions), labels);
  write_metric(out, "vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig", 1,
               fmt::format("{{block_size=\"{}\",enable_prefix_caching=\"True\",engine=\"0\",num_gpu_blocks=\"{}\"}}",
                           e.kv_block_size, total_blocks(e.kv)));
}

}  // namespace

double kv_cache_usage(const std::vector<KVBlockStats>& groups) {
  double usage = 0;
  for (const KVBlockStats& g : groups)
    if (g.total > 0) usage = std::max(usage, double(g.used) / double(g.total));
  return usage;
}

void append_routing_metrics(std::string& out, const EngineSnapshot& engine, const RoutingMetricsOptions& options) {
  ember_names(out, engine);
  if (options.vllm_names) vllm_names(out, engine, options.model_name);
}

bool parse_metrics_compat(const std::string& value) {
  if (value == "vllm") return true;
  if (value.empty() || value == "none") return false;
  fail(ErrorKind::InvalidArgument, "--metrics-compat '{}' must be vllm or none", value);
}

}  // namespace ember::server
