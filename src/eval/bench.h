// Throughput benchmarks following llama-bench:
//   pp<N>: a prompt of N random tokens (BOS first when the vocabulary adds one) processed in
//          decode() calls of at most n_batch tokens, logits for the last token only;
//   tg<N>: N single-token decode steps, each producing logits, from an empty cache (or
//          after a prompt of `depth` tokens that is not timed).
// One warm-up run (the whole prompt for pp, one token for tg), then `reps` timed runs, each
// from a cleared cache. avg_ts / stddev_ts are the mean and sample standard deviation of the
// per-run tokens/second, as llama-bench reports them.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ember {
class Context;
class Model;
}

namespace ember::eval {

struct BenchTest {
  int n_prompt = 0;  // > 0: a pp test
  int n_gen = 0;     // > 0: a tg test
  int n_depth = 0;   // tokens in the cache before the timed part
  std::string variant;  // how the tokens are produced when not llama-bench's way ("greedy", eval/bench_speculative.h)
  std::string name() const;  // "pp512", "tg128", "tg128 @ d4096", "tg128 @ d57 greedy"
};

struct BenchResult {
  BenchTest test;
  std::vector<double> samples_ns;  // wall time of each timed run (without the bandwidth reads)
  // Runs of tests that generate, with BenchOptions::read_bandwidth: the memory read bandwidth
  // (bytes/s) paired with each run's decode (segment_reference).
  std::vector<double> mem_bw_runs;
  std::vector<int> mem_bw_patterns;  // per run: the read pattern that set its reference
  double avg_ns() const;
  double stddev_ns() const;
  std::vector<double> samples_ts() const;  // tokens/second of each run
  double avg_ts() const;
  double stddev_ts() const;                // sample standard deviation (n - 1)
};

struct BenchOptions {
  int reps = 5;
  int n_batch = 2048;
  bool warmup = true;
  uint32_t seed = 1234;  // random prompt tokens
  // When set, generation stops after every decode segment of at least kDecodeSegmentSeconds
  // (and at the end of the run) to read memory for as long as the segment took, outside the
  // timing; this returns the bandwidth in bytes/s of each read pattern it tried. Each run's
  // reference is then made of windows interleaved with its own tokens: on a VM the bandwidth
  // wanders by +-20% from one second to the next, which references read before or after a
  // run cannot follow.
  std::function<std::vector<double>(double seconds)> read_bandwidth;
};

constexpr double kDecodeSegmentSeconds = 0.2;

// A decode segment: tokens generated, and the bandwidth (bytes/s) each read pattern had in the
// window after it.
struct DecodeSegment {
  int tokens = 0;
  std::vector<double> bandwidth;
};

// The bandwidth reference of a run from its segments: for each read pattern, the rate at
// which it would have read the run's bytes, segment by segment, at its bandwidth in each window,
//   sum(tokens) / sum(tokens / bandwidth),
// and the best pattern's rate: the run's share of the roofline is then the time the best
// read needs over the time taken. (The best pattern over the run, not the best in each
// window: that would measure lucky moments no read can choose.) `best_pattern`, when given,
// receives that pattern's index (-1 with no reference).
double segment_reference(const std::vector<DecodeSegment>& segments, int* best_pattern = nullptr);

BenchResult run_bench_test(Context& ctx, const BenchTest& test, const BenchOptions& opt, bool add_bos, int32_t bos);

// The median of v (mean of the middle two for an even count), 0 when empty.
double median(std::vector<double> v);

// n random token ids below n_vocab (BOS first when add_bos), the pp test's kind of prompt.
std::vector<int32_t> random_prompt(int n, int n_vocab, bool add_bos, int32_t bos, uint32_t seed);

// Bytes one decode step reads: every weight tensor except the token embedding (one row of
// it is gathered; it is read whole only when it doubles as the output matrix), plus the K
// and V rows of `kv_tokens` cached tokens. Of a 3-D expert tensor, a token reads the
// n_expert_used experts it is routed to.
uint64_t decode_bytes_per_token(const Model& model, int64_t kv_tokens, size_t kv_bytes_per_token);

}  // namespace ember::eval
