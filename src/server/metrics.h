// The server's counters and latency histograms, rendered in Prometheus' text format
// (version 0.0.4) together with the engine's gauges. Thread-safe.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/scheduler.h"
#include "kv/kv_cache.h"

namespace ember::server {

// What the engine thread last published (see ServingEngine::snapshot).
struct EngineSnapshot {
  int running = 0;
  int waiting = 0;
  std::vector<KVBlockStats> kv;  // one per layer group
  int kv_block_size = 0;         // tokens per KV block
  SchedulerStats scheduler;      // token, preemption and draft totals
};

// One sample with its HELP and TYPE lines; `labels` is "" or `{a="x",b="y"}`.
void write_metric(std::string& out, std::string_view name, const char* type, const char* help, double value,
                  std::string_view labels = "");

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  void render(std::string& out, const char* name, const char* help) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  void observe_ttft(double seconds);
  void observe_itl(double seconds);
  void count_response(int http_status);
  std::string render(const EngineSnapshot& engine) const;

 private:
  mutable std::mutex mu_;
  Histogram ttft_, itl_;
  std::vector<std::pair<int, uint64_t>> responses_;  // by HTTP status
};

}  // namespace ember::server
