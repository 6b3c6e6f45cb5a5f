// Concurrency benchmarks (`ember bench -np 1,4,8,16`), llama-batched-bench's method: every
// one of n_seq sequences gets a prompt of npp random tokens, then ntg decode steps each take
// the next token of all sequences in one batch. Reported: aggregate decode tokens/s (n_seq *
// ntg over the decode time) and the per-sequence inter-token latency (one step's time).
//
// The workload row compares static batching (groups of n_seq requests, the next group
// starting when the whole group has finished; with and without padding to the group's
// longest) with continuous batching (the scheduler fills a freed slot at the next step) on
// the same mixed-length requests.
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

// Output lengths of a workload's requests (prompts are always npp/8..npp, uniform):
//   Uniform:  ntg/16..ntg, uniform.
//   LongTail: exponential with mean ntg/2, at most 4 * ntg: most replies short, a few long,
//             the shape of chat serving traces (ShareGPT's reply lengths).
enum class LengthMix { Uniform, LongTail };
const char* length_mix_name(LengthMix mix);

struct WorkloadRow {
  LengthMix mix = LengthMix::Uniform;
  int n_seq = 0, n_requests = 0;
  int64_t generated = 0;  // tokens, the same in both modes
  double static_s = 0, padded_s = 0, continuous_s = 0;
};

// 4 * n_seq requests of `mix` lengths (seeded), greedy, no stop tokens; the prefix cache is
// off so neither mode profits from the other. Static batching runs them n_seq at a time,
// each group to its end, in two forms: a finished sequence leaves and nothing takes its
// place (static_s), or every sequence computes until the group's longest is done, as a
// rectangular batch does (padded_s: request-level batching, the baseline of the Orca paper).
// Continuous batching runs them all through one scheduler.
WorkloadRow run_workload(const Model& model, ThreadPool& pool, ContextOptions co, int n_seq, int npp, int ntg,
                         LengthMix mix, uint32_t seed);

std::string format_batched_markdown(const std::vector<BatchedRow>& rows, const std::vector<WorkloadRow>& workloads);

}  // namespace ember::eval
