// Concurrency benchmarks (`ember bench -np 1,4,8,16`), llama-batched-bench's method: every
// one of n_seq sequences gets a prompt of npp random tokens, then ntg decode steps each take
// the next token of all sequences in one batch. Reported: aggregate decode tokens/s (n_seq *
// ntg over the decode time) and the per-sequence inter-token latency (one step's time).
//
// The workload row compares static batching (groups of n_seq requests, the next group
// starting when the whole group has finished) with continuous batching (the scheduler fills
// a freed slot at the next step) on the same mixed-length requests.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"

namespace ember::eval {

struct BatchedRow {
  int n_seq = 0, npp = 0, ntg = 0;
  std::vector<double> pp_s, tg_s;  // per timed run
  double tg_ts() const;            // median aggregate decode tokens/s
  double itl_ms() const;           // median decode step time
  double pp_ts() const;            // median aggregate prompt tokens/s
};

BatchedRow run_batched(const Model& model, ThreadPool& pool, ContextOptions co, int n_seq, int npp, int ntg, int reps,
                       uint32_t seed);

struct WorkloadRow {
  int n_seq = 0, n_requests = 0;
  int64_t generated = 0;  // tokens, the same in both modes
  double static_s = 0, continuous_s = 0;
};

// 4 * n_seq requests, prompts of npp/8..npp and outputs of ntg/16..ntg tokens (uniform, seeded),
// greedy, no stop tokens; the prefix cache is off so neither mode profits from the other.
WorkloadRow run_workload(const Model& model, ThreadPool& pool, ContextOptions co, int n_seq, int npp, int ntg,
                         uint32_t seed);

std::string format_batched_markdown(const std::vector<BatchedRow>& rows, const WorkloadRow& workload);

}  // namespace ember::eval
