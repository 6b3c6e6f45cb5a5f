#include "eval/bench_batched.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "engine/scheduler.h"
#include "eval/bench.h"

namespace ember::eval {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

double BatchedRow::tg_ts() const { return n_seq * static_cast<double>(ntg) / median(tg_s); }
double BatchedRow::itl_ms() const { return 1000.0 * median(tg_s) / ntg; }
double BatchedRow::pp_ts() const { return n_seq * static_cast<double>(npp) / median(pp_s); }

BatchedRow run_batched(const Model& model, ThreadPool& pool, ContextOptions co, int n_seq, int npp, int ntg, int reps,
                       uint32_t seed) {
  co.n_seq = n_seq;
  co.n_ctx = npp + ntg;
  co.n_batch = std::max({co.n_batch, npp, n_seq});
  co.print_plan = false;
  Context ctx(model, co, pool);
  const int n_vocab = ctx.n_vocab();
  BatchedRow row{n_seq, npp, ntg, {}, {}};
  std::mt19937 rng(seed);
  Batch b;
  for (int run = -1; run < reps; ++run) {  // run -1: warm-up
    ctx.kv_clear();
    Clock::time_point t0 = Clock::now();
    for (int s = 0; s < n_seq; ++s) {
      b.clear();
      for (int i = 0; i < npp; ++i) b.add(static_cast<int32_t>(rng() % n_vocab), -1, s, i + 1 == npp);
      ctx.decode(b);
    }
    const double pp = seconds_since(t0);
    t0 = Clock::now();
    for (int step = 0; step < ntg; ++step) {
      b.clear();
      for (int s = 0; s < n_seq; ++s) b.add(static_cast<int32_t>(rng() % n_vocab), -1, s, true);
      ctx.decode(b);
    }
    if (run < 0) continue;
    row.pp_s.push_back(pp);
    row.tg_s.push_back(seconds_since(t0));
  }
  return row;
}

const char* length_mix_name(LengthMix mix) { return mix == LengthMix::Uniform ? "uniform" : "long-tailed"; }

namespace {

int output_length(LengthMix mix, int ntg, std::mt19937& rng) {
  if (mix == LengthMix::Uniform) {
    const int min_out = std::max(1, ntg / 16);
    return min_out + static_cast<int>(rng() % (ntg - min_out + 1));
  }
  std::exponential_distribution<double> tail(2.0 / ntg);
  return std::clamp(static_cast<int>(tail(rng)) + 1, 1, 4 * ntg);
}

// Padded static batching: every sequence of a group decodes until the group's longest is
// done, as a rectangular batch does (the tokens past a request's own max_tokens are
// computed and thrown away; the workload still counts only the requested ones).
std::vector<SequenceRequest> padded_to_group_longest(std::vector<SequenceRequest> reqs, int n_seq) {
  for (size_t g = 0; g < reqs.size(); g += n_seq) {
    const size_t end = std::min(reqs.size(), g + n_seq);
    int longest = 0;
    for (size_t i = g; i < end; ++i) longest = std::max(longest, reqs[i].max_tokens);
    for (size_t i = g; i < end; ++i) reqs[i].max_tokens = longest;
  }
  return reqs;
}

}  // namespace

WorkloadRow run_workload(const Model& model, ThreadPool& pool, ContextOptions co, int n_seq, int npp, int ntg,
                         LengthMix mix, uint32_t seed) {
  co.n_seq = n_seq;
  co.n_ctx = npp + 4 * ntg;
  co.n_batch = std::max(co.n_batch, npp);
  co.prefix_cache = false;
  co.print_plan = false;
  Context ctx(model, co, pool);
  std::mt19937 rng(seed);
  std::vector<SequenceRequest> reqs(4 * static_cast<size_t>(n_seq));
  WorkloadRow row{mix, n_seq, static_cast<int>(reqs.size()), 0, 0, 0};
  for (SequenceRequest& r : reqs) {
    const int min_prompt = std::max(1, npp / 8);
    const int np = min_prompt + static_cast<int>(rng() % (npp - min_prompt + 1));
    for (int i = 0; i < np; ++i) r.prompt.push_back(static_cast<int32_t>(rng() % ctx.n_vocab()));
    r.max_tokens = output_length(mix, ntg, rng);
    r.sampling.temperature = 0.0f;
    row.generated += r.max_tokens;
  }
  auto run = [&](const std::vector<SequenceRequest>& rs, size_t begin, size_t end) {
    Scheduler sched(ctx, SchedulerOptions{n_seq, 0}, Scheduler::Events{});
    for (size_t i = begin; i < end; ++i) sched.submit(rs[i]);
    sched.run();
  };
  // Static batching: groups of n_seq, each run to its end before the next starts.
  auto static_seconds = [&](const std::vector<SequenceRequest>& rs) {
    const Clock::time_point t0 = Clock::now();
    for (size_t g = 0; g < rs.size(); g += n_seq) run(rs, g, std::min(rs.size(), g + n_seq));
    return seconds_since(t0);
  };
  row.static_s = static_seconds(reqs);
  row.padded_s = static_seconds(padded_to_group_longest(reqs, n_seq));
  const Clock::time_point t0 = Clock::now();
  run(reqs, 0, reqs.size());
  row.continuous_s = seconds_since(t0);
  return row;
}

std::string format_batched_markdown(const std::vector<BatchedRow>& rows, const std::vector<WorkloadRow>& workloads) {
  // Prefill runs at about the compute ceiling of a CPU: "of prompt" is the share of it that
  // batched decode reaches.
  std::string out = "| n_seq | pp | tg | prompt t/s | decode t/s (all sequences) | x single | ITL ms | of prompt t/s |\n"
                    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  const double base = rows.empty() ? 0 : rows.front().tg_ts() / rows.front().n_seq;
  for (const BatchedRow& r : rows)
    out += fmt::format("| {} | {} | {} | {:.1f} | {:.1f} | {:.2f} | {:.1f} | {:.0f}% |\n", r.n_seq, r.npp, r.ntg, r.pp_ts(),
                       r.tg_ts(), base > 0 ? r.tg_ts() / base : 0.0, r.itl_ms(), 100.0 * r.tg_ts() / r.pp_ts());
  for (const WorkloadRow& w : workloads)
    out += fmt::format(
        "\nworkload: {} requests of {} lengths at {} sequences, {} generated tokens: static batching {:.2f} s "
        "({:.1f} t/s), padded static {:.2f} s ({:.1f} t/s), continuous batching {:.2f} s ({:.1f} t/s): "
        "{:.2f}x static, {:.2f}x padded",
        w.n_requests, length_mix_name(w.mix), w.n_seq, w.generated, w.static_s, w.generated / w.static_s, w.padded_s,
        w.generated / w.padded_s, w.continuous_s, w.generated / w.continuous_s, w.static_s / w.continuous_s,
        w.padded_s / w.continuous_s);
  return out + "\n";
}

}  // namespace ember::eval
