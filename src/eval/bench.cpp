#include "eval/bench.h"

#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <numeric>
#include <random>

#include "gguf/gguf.h"
#include "model/model.h"
#include "util/error.h"

namespace ember::eval {

std::string BenchTest::name() const {
  std::string s = n_prompt > 0 && n_gen == 0   ? fmt::format("pp{}", n_prompt)
                  : n_gen > 0 && n_prompt == 0 ? fmt::format("tg{}", n_gen)
                                               : fmt::format("pp{}+tg{}", n_prompt, n_gen);
  if (n_depth > 0) s += fmt::format(" @ d{}", n_depth);
  if (!variant.empty()) s += " " + variant;
  return s;
}

double BenchResult::avg_ns() const {
  return samples_ns.empty() ? 0 : std::accumulate(samples_ns.begin(), samples_ns.end(), 0.0) / double(samples_ns.size());
}

namespace {
double sample_stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / double(v.size() - 1));
}
}  // namespace

double BenchResult::stddev_ns() const { return sample_stddev(samples_ns); }

std::vector<double> BenchResult::samples_ts() const {
  std::vector<double> ts;
  const double n = double(test.n_prompt + test.n_gen);
  for (double ns : samples_ns) ts.push_back(1e9 * n / ns);
  return ts;
}

double BenchResult::avg_ts() const {
  const auto ts = samples_ts();
  return ts.empty() ? 0 : std::accumulate(ts.begin(), ts.end(), 0.0) / double(ts.size());
}

double BenchResult::stddev_ts() const { return sample_stddev(samples_ts()); }

namespace {

class TokenSource {
 public:
  TokenSource(uint32_t seed, int n_vocab) : rng_(seed), dist_(0, n_vocab - 1) {}
  int32_t next() { return dist_(rng_); }

 private:
  std::mt19937 rng_;
  std::uniform_int_distribution<int32_t> dist_;
};

// A prompt of n tokens continuing the cache, in decode() calls of at most n_batch tokens.
void process_prompt(Context& ctx, int n, int n_batch, TokenSource& src, bool add_bos, int32_t bos) {
  Batch batch;
  int pos = ctx.kv_next_pos(0);
  for (int done = 0; done < n;) {
    const int count = std::min(n - done, n_batch);
    batch.clear();
    for (int i = 0; i < count; ++i) {
      const int32_t tok = (done + i == 0 && add_bos) ? bos : src.next();
      batch.add(tok, pos++, 0, i == count - 1);
    }
    ctx.decode(batch);
    done += count;
  }
}

using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// n decode steps. With read_bandwidth, it is called after each segment (see BenchOptions);
// the segments are appended to `segments` and the time spent reading is added to `excluded`.
void generate(Context& ctx, int n, TokenSource& src, bool add_bos, int32_t bos,
              const std::function<std::vector<double>(double)>& read_bandwidth, std::vector<DecodeSegment>& segments,
              double& excluded) {
  Batch batch;
  int32_t tok = add_bos ? bos : src.next();
  int pos = ctx.kv_next_pos(0);
  Clock::time_point segment_start = Clock::now();
  int segment_tokens = 0;
  for (int i = 0; i < n; ++i) {
    batch.clear();
    batch.add(tok, pos++, 0, true);
    ctx.decode(batch);
    tok = src.next();  // llama-bench feeds random tokens: no sampling cost in the timing
    ++segment_tokens;
    if (!read_bandwidth) continue;
    const Clock::time_point now = Clock::now();
    const double seconds = seconds_between(segment_start, now);
    if (seconds < kDecodeSegmentSeconds && i + 1 < n) continue;
    segments.push_back({segment_tokens, read_bandwidth(seconds)});
    segment_start = Clock::now();
    excluded += seconds_between(now, segment_start);
    segment_tokens = 0;
  }
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<int32_t> random_prompt(int n, int n_vocab, bool add_bos, int32_t bos, uint32_t seed) {
  TokenSource src(seed, n_vocab);
  std::vector<int32_t> tokens;
  for (int i = 0; i < n; ++i) tokens.push_back(i == 0 && add_bos ? bos : src.next());
  return tokens;
}

BenchResult run_bench_test(Context& ctx, const BenchTest& test, const BenchOptions& opt, bool add_bos, int32_t bos) {
  if (test.n_prompt < 0 || test.n_gen < 0 || test.n_depth < 0 || test.n_prompt + test.n_gen == 0) {
    fail(ErrorKind::InvalidArgument, "bench: test {} has nothing to time", test.name());
  }
  const int64_t needed = int64_t(test.n_depth) + test.n_prompt + test.n_gen;
  if (needed > ctx.n_ctx()) {
    fail(ErrorKind::InvalidArgument, "bench: {} needs {} tokens of context, the context holds {}", test.name(), needed,
         ctx.n_ctx());
  }
  if (opt.reps < 1) fail(ErrorKind::InvalidArgument, "bench: -r {} must be at least 1", opt.reps);
  TokenSource src(opt.seed, ctx.n_vocab());
  std::vector<DecodeSegment> segments;
  double excluded = 0.0;  // seconds of bandwidth reads inside the timed part
  const auto timed_part = [&] {
    if (test.n_prompt > 0) process_prompt(ctx, test.n_prompt, opt.n_batch, src, add_bos, bos);
    if (test.n_gen > 0) generate(ctx, test.n_gen, src, add_bos, bos, opt.read_bandwidth, segments, excluded);
  };
  if (opt.warmup) {
    ctx.kv_clear();
    if (test.n_prompt > 0) process_prompt(ctx, test.n_prompt, opt.n_batch, src, add_bos, bos);
    if (test.n_gen > 0) generate(ctx, 1, src, add_bos, bos, {}, segments, excluded);
  }
  BenchResult result;
  result.test = test;
  for (int r = 0; r < opt.reps; ++r) {
    ctx.kv_clear();
    if (test.n_depth > 0) process_prompt(ctx, test.n_depth, opt.n_batch, src, add_bos, bos);
    segments.clear();
    excluded = 0.0;
    const Clock::time_point t0 = Clock::now();
    timed_part();
    const Clock::time_point t1 = Clock::now();
    result.samples_ns.push_back(1e9 * (seconds_between(t0, t1) - excluded));
    if (segments.empty()) continue;
    int pattern = -1;
    result.mem_bw_runs.push_back(segment_reference(segments, &pattern));
    result.mem_bw_patterns.push_back(pattern);
  }
  return result;
}

double segment_reference(const std::vector<DecodeSegment>& segments, int* best_pattern) {
  if (best_pattern) *best_pattern = -1;
  if (segments.empty()) return 0.0;
  const size_t patterns = segments.front().bandwidth.size();
  double best = 0.0;
  int best_p = -1;
  for (size_t p = 0; p < patterns; ++p) {
    double tokens = 0.0, roofline_seconds_per_byte = 0.0;
    for (const DecodeSegment& s : segments) {
      if (s.tokens <= 0 || s.bandwidth.size() != patterns || s.bandwidth[p] <= 0.0)
        return 0.0;  // no usable reference for this run
      tokens += s.tokens;
      roofline_seconds_per_byte += s.tokens / s.bandwidth[p];
    }
    if (tokens / roofline_seconds_per_byte > best) {
      best = tokens / roofline_seconds_per_byte;
      best_p = static_cast<int>(p);
    }
  }
  if (best_pattern) *best_pattern = best_p;
  return best;
}

uint64_t decode_bytes_per_token(const Model& model, int64_t kv_tokens, size_t kv_bytes_per_token) {
  const gguf::File& f = model.gguf();
  const Hparams& hp = model.hparams();
  const bool tied_output = f.find_tensor("output.weight") == nullptr;
  uint64_t bytes = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (t.name == "token_embd.weight" && !tied_output) {
      bytes += t.nbytes / uint64_t(std::max<int64_t>(1, t.ne[1]));  // one gathered row
    } else if (hp.n_expert > 0 && t.ne[2] == hp.n_expert) {
      bytes += t.nbytes / uint64_t(hp.n_expert) * uint64_t(hp.n_expert_used);  // a token's experts only
    } else {
      bytes += t.nbytes;
    }
  }
  return bytes + uint64_t(kv_tokens) * kv_bytes_per_token;
}

}  // namespace ember::eval
