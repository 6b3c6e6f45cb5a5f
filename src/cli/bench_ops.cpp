// `ember bench-ops`: the CPU kernels against the machine's roofline.
//
//   ember bench-ops                      bandwidth, matvec GB/s per type (1 and -t threads), matmul GFLOP/s
//   ember bench-ops -t 2 --types Q4_0,Q4_K --reps 9
//   ember bench-ops --no-matmul          only the memory-bound part (and attention)
//   ember bench-ops --gpu                only the GPU tables (eval/bench_ops_gpu.cpp), which otherwise
//                                        follow the CPU ones when a CUDA device is present
//   EMBER_CUDA_ON_CPU=1 ember bench-ops --gpu --small   the same on the CPU execution, tiny shapes
//
// matvec (one token, the decode case) is memory-bound: it is reported as weight bytes read
// per second and as a percentage of the read bandwidth measured with the same thread count.
// The weights are cycled over several copies totalling >= 256 MiB so they come from DRAM,
// not from the last-level cache, as a real model's would. matmul (a 512-token prefill) is
// compute-bound and reported in GFLOP/s (2 * rows * cols * tokens per call). matvec figures
// come from --reps segments of calls, each paired with a read of memory for as long;
// matmul figures are the median of timed calls. Both after a warm-up call. The attention
// table (bench_ops_attention.cpp) times the attention op on model-shaped heads.
#include <fmt/format.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "util/thread_pool.h"
#include "backend/ops.h"
#include "cli/bench_ops_attention.h"
#include "eval/bench_ops_gpu.h"
#include "eval/bench_ops_weights.h"
#include "cli/commands.h"
#include "eval/bench.h"
#include "tensor/quant.h"
#include "util/error.h"
#include "util/membw.h"

namespace ember::cli {

namespace {

struct BenchOpsFlags {
  int threads = 2;
  std::string types = "Q4_0,Q8_0,Q4_K,Q6_K,F16";
  int reps = 7;
  int batch = 512;
  bool no_matvec = false;
  bool no_matmul = false;
  bool no_attention = false;
  bool gpu_only = false;  // --gpu: only the GPU tables
  bool small = false;     // --small: the GPU tables with tiny shapes (for EMBER_CUDA_ON_CPU=1)
};

DType parse_type(const std::string& name) {
  for (uint32_t id = 0; id < kDTypeIdLimit; ++id) {
    if (!dtype_id_known(id)) continue;
    const DType t = static_cast<DType>(id);
    if (name == dtype_name(t)) {
      if (!dtype_can_compute(t)) fail(ErrorKind::Unsupported, "--types: {} is not a CPU weight type", name);
      return t;
    }
  }
  fail(ErrorKind::InvalidArgument, "--types: unknown type '{}'", name);
}

std::vector<DType> parse_types(const std::string& list) {
  std::vector<DType> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(parse_type(item));
  return out;
}

// A weight matrix of `rows` x `cols`, `copies` times: a block of quantized random rows
// (reference quantizer) tiled over the whole buffer, which is as good as fully random for
// timing and keeps the setup fast.
struct BenchWeights {
  DType type;
  int64_t rows, cols;
  size_t row_bytes, matrix_bytes;
  int copies;
  std::unique_ptr<uint8_t[]> data;

  BenchWeights(DType t, int64_t r, int64_t c, size_t min_total_bytes)
      : type(t), rows(r), cols(c), row_bytes(dtype_row_bytes(t, c)), matrix_bytes(row_bytes * r) {
    copies = static_cast<int>(std::max<size_t>(1, (min_total_bytes + matrix_bytes - 1) / matrix_bytes));
    const size_t total = matrix_bytes * copies;
    data.reset(new uint8_t[total]);
    eval::fill_bench_rows(t, c, std::min<int64_t>(r, 32), data.get(), total);
  }
  std::vector<PackedWeight> packed;  // when repacked: one per copy

  MatView rows_view(int copy) const {
    return MatView{type, cols, rows, row_bytes, data.get() + matrix_bytes * static_cast<size_t>(copy % copies)};
  }
  MatView view(int copy) const {
    return packed.empty() ? rows_view(copy) : packed[static_cast<size_t>(copy % copies)].view;
  }
  // Switches to the CPU kernels' packed layout; false when the type has none here.
  bool repack() {
    for (int i = 0; i < copies; ++i) {
      std::optional<PackedWeight> p = ops::pack_weight(rows_view(i));
      if (!p) return false;
      packed.push_back(std::move(*p));
    }
    data.reset();  // the packed copies replace the rows (keeps the DRAM footprint the same)
    return true;
  }
};

// The layouts a type is measured in: its rows as stored, and repacked when the CPU kernels
// have a packed layout for it (what models use unless --no-repack).
std::vector<bool> layouts_of(DType t) {
  BenchWeights probe(t, 8, dtype_size(t).block_size * 8, 0);
  return probe.repack() ? std::vector<bool>{false, true} : std::vector<bool>{false};
}
const char* layout_name(bool packed) { return packed ? "packed" : "rows"; }

struct Timing {
  double median, best;  // seconds per call
};

// The median is the figure to quote; the best call shows what the kernel does when the
// machine leaves it alone (on a busy machine the two differ a lot).
template <class F>
Timing time_calls(int reps, F&& call) {
  call(0);  // warm-up
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call(i + 1);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return Timing{t[t.size() / 2], t.front()};
}

// Matvec from DRAM against the bandwidth read alongside it: calls run in segments of at least
// kSegmentSeconds, each followed by a read of memory for as long (as `ember bench` does
// between decode tokens: this VM's bandwidth wanders too fast for reads taken only before
// and after a figure). gbs is the weight bytes per second over all segments; reference the
// bandwidth the same bytes would have met, segment by segment (eval::segment_reference).
struct PairedRate {
  double gbs = 0.0, reference_gbs = 0.0, best_segment_gbs = 0.0;
};

template <class F>
PairedRate time_against_bandwidth(BandwidthProbe& probe, size_t bytes_per_call, int segments, F&& call) {
  constexpr double kSegmentSeconds = 0.1;
  call(0);  // warm-up
  int n = 1;
  std::vector<eval::DecodeSegment> windows;
  double seconds = 0.0, calls = 0.0;
  PairedRate r;
  for (int s = 0; s < segments; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    int c = 0;
    double t = 0.0;
    do {
      call(n++);
      ++c;
      t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (t < kSegmentSeconds);
    windows.push_back({c, bytes_per_s(probe.gb_per_s_over(t))});
    seconds += t;
    calls += c;
    r.best_segment_gbs = std::max(r.best_segment_gbs, static_cast<double>(bytes_per_call) * c / t / 1e9);
  }
  r.gbs = static_cast<double>(bytes_per_call) * calls / seconds / 1e9;
  r.reference_gbs = eval::segment_reference(windows) / 1e9;
  return r;
}

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Kernel speed independent of DRAM and of other processes: a 512x4096 matrix that stays in
// cache, one thread, timed by the thread's own CPU time (best of 5 rounds). Compare it with
// the per-thread share of the read bandwidth: a kernel slower than that cannot reach it.
void print_core_throughput(const std::vector<DType>& types) {
  fmt::print("\nkernel throughput per core (in-cache 512x4096 matvec, thread CPU time)\n");
  fmt::print("| type | layout | GB/s of weights per core |\n|------|--------|------:|\n");
  ThreadPool pool(1);
  for (DType t : types) for (bool packed : layouts_of(t)) {
    BenchWeights w(t, 512, 4096, 0);
    if (packed) w.repack();
    std::vector<float> x(4096, 0.5f), y(512);
    auto call = [&] {
      ops::matmul(pool, w.view(0), MatView{DType::F32, 4096, 1, 4096 * 4, x.data()}, F32Mat{y.data(), 512, 1, 512});
    };
    call();
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
      const double t0 = thread_cpu_seconds();
      for (int i = 0; i < 50; ++i) call();
      best = std::min(best, (thread_cpu_seconds() - t0) / 50);
    }
    fmt::print("| {} | {} | {:.1f} |\n", dtype_name(t), layout_name(packed), static_cast<double>(w.matrix_bytes) / best / 1e9);
  }
}

// The GPU tables (eval/bench_ops_gpu.h) when a CUDA device is present, or the CPU execution of
// the kernels (EMBER_CUDA_ON_CPU=1) with --small: at full size it would take hours there.
void maybe_print_gpu_tables(const BenchOpsFlags& f) {
  const DeviceKind device = choose_placement(-1, 1).device;
  if (device == DeviceKind::Cpu) {
    if (f.gpu_only) fail(ErrorKind::Unsupported, "--gpu: no CUDA device (EMBER_CUDA_ON_CPU=1 runs the kernels on the CPU)");
    return;
  }
  if (device == DeviceKind::CudaOnCpu && !f.small) {
    fmt::print("\nGPU tables: skipped on the CPU execution of the kernels without --small\n");
    return;
  }
  eval::print_gpu_tables(device, f.small, f.reps);
}

int run_bench_ops(const BenchOpsFlags& f) {
  if (f.threads < 1 || f.reps < 1 || f.batch < 1)
    fail(ErrorKind::InvalidArgument, "-t, --reps and --batch must be positive");
  if (f.gpu_only) {
    maybe_print_gpu_tables(f);
    return 0;
  }
  const std::vector<DType> types = parse_types(f.types);
  std::vector<int> thread_counts{1};
  if (f.threads > 1) thread_counts.push_back(f.threads);

  fmt::print("ember bench-ops: SIMD {} (CPU: {}), --reps {}\n", simd_level_name(simd_level()),
             cpu_features_string(), f.reps);
  for (int t : thread_counts) {
    ThreadPool pool(t);
    ReadBandwidth bw = measure_read_bandwidth(pool, size_t{512} << 20, f.reps);
    fmt::print(
        "memory read bandwidth, {} thread{}: {:.1f} GB/s (min {:.1f}, max {:.1f}; {} MiB buffer); "
        "by thread CPU time {:.1f} GB/s; best read: {}\n",
        t, t > 1 ? "s" : "", bw.gb_per_s, bw.min_gb_per_s, bw.max_gb_per_s, bw.bytes >> 20, bw.cpu_time_gb_per_s,
        bw.pattern);
    for (size_t i = 0; i < kReadPatterns.size(); ++i)
      fmt::print("  {}: {:.1f} GB/s (median)\n", kReadPatterns[i].name, bw.pattern_gb_per_s[i]);
  }

  if (!f.no_matvec) {
    print_core_throughput(types);
    fmt::print("\nmatvec (1 token, weights cycled over >= 256 MiB so they come from DRAM; {} segments of calls, "
               "each followed by a read of memory for as long)\n", f.reps);
    fmt::print("| type | layout | rows x cols | threads | us/call | GB/s | read bw GB/s | % of read bw | best segment GB/s |\n");
    fmt::print("|------|--------|-------------|--------:|--------:|-----:|-------------:|-------------:|----------:|\n");
    const int64_t shapes[][2] = {{4096, 4096}, {4096, 14336}};
    for (DType t : types) for (bool packed : layouts_of(t)) {
      for (const auto& s : shapes) {
        BenchWeights w(t, s[0], s[1], size_t{256} << 20);
        if (packed) w.repack();
        std::vector<float> x(static_cast<size_t>(s[1]), 0.5f), y(static_cast<size_t>(s[0]));
        for (size_t ti = 0; ti < thread_counts.size(); ++ti) {
          ThreadPool pool(thread_counts[ti]);
          BandwidthProbe probe(pool);
          probe.pattern_passes();  // warm-up
          const PairedRate r = time_against_bandwidth(probe, w.matrix_bytes, f.reps, [&](int i) {
            ops::matmul(pool, w.view(i), MatView{DType::F32, s[1], 1, static_cast<size_t>(s[1]) * 4, x.data()},
                        F32Mat{y.data(), s[0], 1, s[0]});
          });
          fmt::print("| {} | {} | {}x{} | {} | {:.0f} | {:.1f} | {:.1f} | {:.0f}% | {:.1f} |\n", dtype_name(t), layout_name(packed),
                     s[0], s[1], thread_counts[ti], static_cast<double>(w.matrix_bytes) / r.gbs / 1e3, r.gbs,
                     r.reference_gbs, 100.0 * r.gbs / r.reference_gbs, r.best_segment_gbs);
        }
      }
    }
  }

  if (!f.no_matmul) {
    fmt::print("\nmatmul (prefill: {} tokens x 4096x4096 weights, {} threads)\n", f.batch, f.threads);
    fmt::print("| type | layout | ms/call | GFLOP/s | best GFLOP/s |\n|------|--------|--------:|--------:|-------------:|\n");
    const DType prefill_types[] = {DType::Q4_0, DType::Q5_0, DType::Q4_1, DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::F16};
    ThreadPool pool(f.threads);
    const int64_t n = 4096, k = 4096, m = f.batch;
    std::vector<float> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(m * n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    for (DType t : prefill_types) {
      if (std::find(types.begin(), types.end(), t) == types.end()) continue;
      for (bool packed : layouts_of(t)) {
      BenchWeights w(t, n, k, 0);
      if (packed) w.repack();
      const Timing tm = time_calls(std::max(3, f.reps / 2), [&](int) {
        ops::matmul(pool, w.view(0), MatView{DType::F32, k, m, static_cast<size_t>(k) * 4, x.data()},
                    F32Mat{y.data(), n, m, n});
      });
      const double flop = 2.0 * static_cast<double>(n) * k * m;
      fmt::print("| {} | {} | {:.1f} | {:.1f} | {:.1f} |\n", dtype_name(t), layout_name(packed), tm.median * 1e3,
                 flop / tm.median / 1e9, flop / tm.best / 1e9);
      }
    }
  }
  if (!f.no_attention) print_attention_table(f.threads, f.reps);
  maybe_print_gpu_tables(f);
  return 0;
}

}  // namespace

void add_bench_ops(CLI::App& app) {
  auto flags = std::make_shared<BenchOpsFlags>();
  CLI::App* cmd = app.add_subcommand("bench-ops", "Benchmark the CPU matmul kernels against the memory roofline, and the attention op");
  cmd->add_option("-t,--threads", flags->threads, "threads (matvec also runs with 1)")->capture_default_str();
  cmd->add_option("--types", flags->types, "comma-separated weight types")->capture_default_str();
  cmd->add_option("--reps", flags->reps, "timed repetitions per figure (median reported)")->capture_default_str();
  cmd->add_option("--batch", flags->batch, "tokens in the matmul (prefill) benchmark")->capture_default_str();
  cmd->add_flag("--no-matvec", flags->no_matvec, "skip the matvec table");
  cmd->add_flag("--no-matmul", flags->no_matmul, "skip the matmul table");
  cmd->add_flag("--no-attention", flags->no_attention, "skip the attention table");
  cmd->add_flag("--gpu", flags->gpu_only, "only the GPU tables (a CUDA device, or EMBER_CUDA_ON_CPU=1 with --small)");
  cmd->add_flag("--small", flags->small, "GPU tables with tiny shapes (for EMBER_CUDA_ON_CPU=1)");
  cmd->callback([flags] { set_exit_code(guarded("bench-ops", [&] { return run_bench_ops(*flags); })); });
}

}  // namespace ember::cli
