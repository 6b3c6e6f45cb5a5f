// The metrics that load balancers, LLM routers and autoscalers read to choose a replica:
// KV-cache usage in 0..1, the cache's shape (block size, blocks), prefix-cache lookups and
// hits in tokens. Under ember's own names always; with `vllm_names` also under vLLM's
// (`vllm:num_requests_running`, `vllm:kv_cache_usage_perc`, ...), which the Gateway API
// Inference Extension's endpoint picker, vllm-router and vLLM's production-stack router
// read by default.
#pragma once
#include <string>
#include <vector>

#include "server/metrics.h"

namespace ember::server {

struct RoutingMetricsOptions {
  std::string model_name;   // the `model_name` label of the vLLM names
  bool vllm_names = false;  // --metrics-compat vllm
};

// Blocks owned by sequences over all blocks, of the fullest layer group (the one that
// refuses the next request first). Cached blocks count as free: they are given back on
// demand, as vLLM counts its evictable prefix blocks.
double kv_cache_usage(const std::vector<KVBlockStats>& groups);

// Appends the samples above to a Prometheus text body.
void append_routing_metrics(std::string& out, const EngineSnapshot& engine, const RoutingMetricsOptions& options);

// "vllm" -> true, "" or "none" -> false; anything else is Error(InvalidArgument).
bool parse_metrics_compat(const std::string& value);

}  // namespace ember::server
