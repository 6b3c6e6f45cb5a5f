// A benchmark's report: markdown for people (stdout), JSON for tools (--json), with the key
// names vLLM's benchmark_serving writes (mean_ttft_ms, output_throughput, ...) so scripts
// written for one read the other.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loadgen/metrics.h"

namespace ember::loadgen {

// `config` (flat: names to values) is echoed in both: a header line and a "config" object.
std::string markdown_report(const Summary& s, const nlohmann::json& config, const std::vector<RequestResult>& results);
nlohmann::json json_report(const Summary& s, const nlohmann::json& config, const std::vector<RequestResult>& results);

}  // namespace ember::loadgen
