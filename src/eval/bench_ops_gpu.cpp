// `ember bench-ops` GPU tables, every figure against a reference measured in the same run:
//
//   reference   the device's copy bandwidth (cuda/copy_probe.h: device to device, read +
//               write counted as NVIDIA's bandwidthTest does) and the tensor cores' dense
//               peak (cuda/tensor_peak.h: compute capability x SMs x clock)
//   matvec      Kernels::matmul with one token (decode): weight GB/s per weight type, the
//               weights cycled over copies so that they come from device memory; quantised
//               types take the q8_1 activations of quantize_normed, as the backend passes them
//   attention   Kernels::attention, decode (one query) at 4096/8192/32768 keys, f16 and q8_0
//               KV, Llama-3-8B heads (32:8 x 128): GB/s of K and V read, caches cycled too
//   prefill     Kernels::matmul with 512 and 2048 tokens: TOPS against the int8 peak for
//               quantised weights (the mma.sync kernel), the f16 peak for float weights
//
// Timing: a warm-up call, then batches of calls (as many as fill kBatchSeconds), each timed
// by the wall clock around its launches and one stream synchronize; the median batch.
#include "eval/bench_ops_gpu.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "eval/bench_ops_weights.h"
#include "cuda/copy_probe.h"
#include "cuda/device_memory.h"
#include "cuda/device_select.h"
#include "cuda/tensor_peak.h"
#include "sampling/rng.h"

namespace ember::eval {

namespace {

using cuda::DeviceRuntime;
using cuda::Kernels;
using cuda::Stream;

const DType kWeightTypes[] = {DType::Q4_0, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_0, DType::F16, DType::BF16};
const DType kKVTypes[] = {DType::F16, DType::Q8_0};

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// The sizes of the tables: a Llama-3-8B layer on a GPU, or tiny ones for the CPU execution.
struct Shapes {
  std::vector<std::pair<int64_t, int64_t>> matvec;   // rows x cols
  std::vector<std::pair<int64_t, int64_t>> prefill;  // rows x cols
  std::vector<int64_t> prefill_tokens;
  std::vector<int64_t> depths;
  int n_head, n_head_kv, head_dim;
  size_t cycle_bytes;    // weights and caches are cycled over copies of at least this many bytes
  double batch_seconds;  // a timed batch holds at least this much work
};

Shapes shapes_for(bool small) {
  if (small) return {{{96, 256}}, {{64, 256}}, {64, 128}, {64, 200}, 4, 2, 64, size_t{1} << 20, 0.0};
  return {{{4096, 4096}, {14336, 4096}, {4096, 14336}},
          {{4096, 4096}, {14336, 4096}},
          {512, 2048},
          {4096, 8192, 32768},
          32, 8, 128,
          size_t{1} << 30,  // H100/H200 L2: 50 MiB
          0.02};
}

// Device memory released with its owner (cuda/device_memory.h), as bytes.
using DeviceBytes = cuda::DeviceMemory;
uint8_t* bytes_of(const DeviceBytes& m) { return static_cast<uint8_t*>(m.data()); }

// `copies` copies of `host` on the device, one after the other (uploaded once, then copied).
struct Cycled {
  DeviceBytes mem;
  size_t stride;
  int copies;
  Cycled(DeviceRuntime& rt, const std::vector<uint8_t>& host, int n)
      : mem(rt, host.size() * static_cast<size_t>(n)), stride(host.size()), copies(n) {
    rt.upload(bytes_of(mem), host.data(), host.size(), nullptr);
    for (int i = 1; i < n; ++i) rt.copy(bytes_of(mem) + stride * static_cast<size_t>(i), bytes_of(mem), stride, nullptr);
    rt.synchronize(nullptr);
  }
  uint8_t* at(int i) const { return bytes_of(mem) + stride * static_cast<size_t>(i % copies); }
};

int copies_for(size_t bytes, size_t cycle_bytes) {
  return static_cast<int>(std::max<size_t>(1, (cycle_bytes + bytes - 1) / bytes));
}

// Median seconds per call (see the file comment). call(i) enqueues call i on s.
template <class F>
double seconds_per_call(DeviceRuntime& rt, Stream s, const Shapes& sh, int reps, F&& call) {
  auto batch = [&](int n, int first) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) call(first + i);
    rt.synchronize(s);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  batch(1, 0);  // warm-up
  int n = 1;
  while (batch(n, 1) < sh.batch_seconds && n < (1 << 16)) n *= 2;
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) t.push_back(batch(n, 1 + r * n) / n);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// A weight matrix in device memory, cycled, and the activations a matmul of it takes.
struct DeviceMatmul {
  DType type;
  int64_t rows, cols, tokens;
  Cycled w;
  DeviceBytes x, xq, y, scratch, ones;
  const Kernels& k;

  DeviceMatmul(DeviceRuntime& rt, const Kernels& kern, DType t, int64_t r, int64_t c, int64_t n, size_t cycle_bytes)
      : type(t), rows(r), cols(c), tokens(n), w(rt, host_rows(t, r, c), copies_for(dtype_row_bytes(t, c) * r, cycle_bytes)),
        x(rt, static_cast<size_t>(n * c) * sizeof(float)), xq(rt, kern.quantize_normed_bytes(c, n)),
        y(rt, static_cast<size_t>(n * r) * sizeof(float)), scratch(rt, kern.matmul_scratch_bytes(weight(0), n)),
        ones(rt, static_cast<size_t>(c) * sizeof(float)), k(kern) {
    const std::vector<float> xh(static_cast<size_t>(n * c), 0.5f), oh(static_cast<size_t>(c), 1.0f);
    rt.upload(bytes_of(x), xh.data(), xh.size() * sizeof(float), nullptr);
    rt.upload(bytes_of(ones), oh.data(), oh.size() * sizeof(float), nullptr);
    if (!is_float(t)) {  // the q8_1 activations, made once as the backend makes them per step
      k.quantize_normed(x_f32(), reinterpret_cast<const float*>(bytes_of(ones)), 1e-5f, bytes_of(xq), nullptr);
      rt.synchronize(nullptr);
    }
  }
  static std::vector<uint8_t> host_rows(DType t, int64_t r, int64_t c) {
    std::vector<uint8_t> h(dtype_row_bytes(t, c) * static_cast<size_t>(r));
    fill_bench_rows(t, c, std::min<int64_t>(r, 32), h.data(), h.size());
    return h;
  }
  MatView weight(int i) const { return MatView{type, cols, rows, dtype_row_bytes(type, cols), w.at(i)}; }
  MatView x_f32() const { return MatView{DType::F32, cols, tokens, static_cast<size_t>(cols) * sizeof(float), bytes_of(x)}; }
  MatView input() const {
    return is_float(type) ? x_f32() : MatView{DType::Q8_1, cols, tokens, dtype_row_bytes(DType::Q8_1, cols), bytes_of(xq)};
  }
  void call(int i, Stream s) const {
    k.matmul(weight(i), input(), F32Mat{reinterpret_cast<float*>(bytes_of(y)), rows, tokens, rows}, bytes_of(scratch), s);
  }
  size_t weight_bytes() const { return dtype_row_bytes(type, cols) * static_cast<size_t>(rows); }
};

void print_matvec(DeviceRuntime& rt, const Kernels& k, Stream s, const Shapes& sh, int reps, double copy_gbs) {
  fmt::print("\nmatvec (1 token, weights cycled over >= {} MiB; median of {} batches)\n", sh.cycle_bytes >> 20, reps);
  fmt::print("| type | rows x cols | us/call | GB/s | % of copy bw |\n|------|-------------|--------:|-----:|-------------:|\n");
  for (DType t : kWeightTypes)
    for (const auto& [rows, cols] : sh.matvec) {
      const DeviceMatmul m(rt, k, t, rows, cols, 1, sh.cycle_bytes);
      const double sec = seconds_per_call(rt, s, sh, reps, [&](int i) { m.call(i, s); });
      const double gbs = static_cast<double>(m.weight_bytes()) / sec / 1e9;
      fmt::print("| {} | {}x{} | {:.1f} | {:.1f} | {:.0f}% |\n", dtype_name(t), rows, cols, sec * 1e6, gbs,
                 100.0 * gbs / copy_gbs);
    }
}

// One sequence's cache of `depth` keys in a paged pool (identity block table), its copies
// cycled, and what a decode call reads.
struct DeviceCache {
  static constexpr int kBlock = 32;
  DType type;
  int64_t depth;
  size_t row_bytes;
  Cycled k, v;
  DeviceBytes table;

  DeviceCache(DeviceRuntime& rt, DType t, int64_t d, int64_t row_elems, size_t cycle_bytes)
      : type(t), depth(d), row_bytes(dtype_row_bytes(t, row_elems)),
        k(rt, host_cache(t, d, row_elems, 1), copies_for(2 * row_bytes * blocks(d) * kBlock, cycle_bytes)),
        v(rt, host_cache(t, d, row_elems, 2), k.copies),
        table(rt, (cuda::kDevKVHeader + blocks(d)) * sizeof(int32_t)) {
    std::vector<int32_t> th{0, static_cast<int32_t>(d)};
    for (int64_t b = 0; b < blocks(d); ++b) th.push_back(static_cast<int32_t>(b));
    rt.upload(bytes_of(table), th.data(), th.size() * sizeof(int32_t), nullptr);
  }
  static int64_t blocks(int64_t d) { return (d + kBlock - 1) / kBlock; }
  static std::vector<uint8_t> host_cache(DType t, int64_t d, int64_t row_elems, uint64_t seed) {
    const size_t rb = dtype_row_bytes(t, row_elems);
    std::vector<uint8_t> h(rb * static_cast<size_t>(blocks(d) * kBlock));
    std::vector<float> row(static_cast<size_t>(row_elems));
    Rng rng(seed);
    for (int64_t r = 0; r < d; ++r) {
      for (float& x : row) x = static_cast<float>(2.0 * rng.uniform01() - 1.0);
      ops::store_row(row.data(), row_elems, t, h.data() + static_cast<size_t>(r) * rb);
    }
    return h;
  }
  cuda::DevKV view(int i) const {
    cuda::DevKV kv;
    kv.k_type = kv.v_type = type;
    kv.k = k.at(i);
    kv.v = v.at(i);
    kv.k_row_bytes = kv.v_row_bytes = row_bytes;
    kv.table = reinterpret_cast<const int32_t*>(bytes_of(table));
    kv.block_size = kBlock;
    kv.capacity = blocks(depth) * kBlock;
    kv.table_stride = cuda::kDevKVHeader + blocks(depth);  // one sequence: one table
    return kv;
  }
  size_t bytes_read() const { return 2 * row_bytes * static_cast<size_t>(depth); }
};

void print_attention(DeviceRuntime& rt, const Kernels& k, Stream s, const Shapes& sh, int reps, double copy_gbs) {
  fmt::print("\nattention (decode: one query, {}:{} heads x {}; caches cycled over >= {} MiB; median of {} batches)\n",
             sh.n_head, sh.n_head_kv, sh.head_dim, sh.cycle_bytes >> 20, reps);
  fmt::print("| KV type | keys | us/call | GB/s of KV | % of copy bw |\n|------|-----:|--------:|-----:|-------------:|\n");
  const AttentionParams p{sh.n_head, sh.n_head_kv, sh.head_dim, 1.0f / std::sqrt(static_cast<float>(sh.head_dim)), 0, 0.0f};
  const int64_t q_cols = static_cast<int64_t>(sh.n_head) * sh.head_dim;
  DeviceBytes q(rt, static_cast<size_t>(q_cols) * sizeof(float)), out(rt, static_cast<size_t>(q_cols) * sizeof(float));
  const std::vector<float> qh(static_cast<size_t>(q_cols), 0.01f);
  rt.upload(bytes_of(q), qh.data(), qh.size() * sizeof(float), nullptr);
  for (DType t : kKVTypes)
    for (int64_t depth : sh.depths) {
      const DeviceCache c(rt, t, depth, static_cast<int64_t>(sh.n_head_kv) * sh.head_dim, sh.cycle_bytes);
      DeviceBytes pos(rt, sizeof(int32_t)), scratch(rt, k.attention_scratch_bytes(p, 1, 1, c.view(0).capacity));
      DeviceBytes bounds(rt, 2 * sizeof(int32_t));  // one run of one query
      const int32_t last = static_cast<int32_t>(depth - 1), one_run[2] = {0, 1};
      rt.upload(bytes_of(pos), &last, sizeof last, nullptr);
      rt.upload(bytes_of(bounds), one_run, sizeof one_run, nullptr);
      const cuda::DevRuns runs{reinterpret_cast<const int32_t*>(bytes_of(bounds)), 1, 1};
      const MatView qv{DType::F32, q_cols, 1, static_cast<size_t>(q_cols) * sizeof(float), bytes_of(q)};
      const double sec = seconds_per_call(rt, s, sh, reps, [&](int i) {
        k.attention(qv, reinterpret_cast<const int32_t*>(bytes_of(pos)), runs, c.view(i), p,
                    F32Mat{reinterpret_cast<float*>(bytes_of(out)), q_cols, 1, q_cols}, bytes_of(scratch), s);
      });
      const double gbs = static_cast<double>(c.bytes_read()) / sec / 1e9;
      fmt::print("| {} | {} | {:.1f} | {:.1f} | {:.0f}% |\n", dtype_name(t), depth, sec * 1e6, gbs, 100.0 * gbs / copy_gbs);
    }
}

void print_prefill(DeviceRuntime& rt, const Kernels& k, Stream s, const Shapes& sh, int reps) {
  const cuda::TensorPeak int8 = cuda::tensor_peak(rt.info(), cuda::MmaOperand::Int8);
  const cuda::TensorPeak f16 = cuda::tensor_peak(rt.info(), cuda::MmaOperand::F16);
  fmt::print("\nprefill matmul (TOPS: 2 x rows x cols x tokens per call; median of {} batches)\n", reps);
  fmt::print("int8 tensor-core peak: {:.0f} TOPS ({})\n", int8.ops_per_s / 1e12, int8.how);
  fmt::print("f16 tensor-core peak: {:.0f} TFLOPS ({})\n", f16.ops_per_s / 1e12, f16.how);
  fmt::print("| type | rows x cols | tokens | ms/call | TOPS | % of peak | peak |\n"
             "|------|-------------|-------:|--------:|-----:|----------:|------|\n");
  for (DType t : kWeightTypes)
    for (const auto& [rows, cols] : sh.prefill)
      for (int64_t n : sh.prefill_tokens) {
        const DeviceMatmul m(rt, k, t, rows, cols, n, 0);  // compute-bound: no cycling
        const double sec = seconds_per_call(rt, s, sh, reps, [&](int i) { m.call(i, s); });
        const double ops = 2.0 * static_cast<double>(rows) * cols * n / sec;
        const cuda::TensorPeak& peak = is_float(t) ? f16 : int8;
        fmt::print("| {} | {}x{} | {} | {:.2f} | {:.1f} | {} | {} |\n", dtype_name(t), rows, cols, n, sec * 1e3, ops / 1e12,
                   peak.ops_per_s > 0 ? fmt::format("{:.0f}%", 100.0 * ops / peak.ops_per_s) : std::string("n/a"),
                   is_float(t) ? "f16" : "int8");
      }
}

}  // namespace

void print_gpu_tables(DeviceKind device, bool small, int reps) {
  DeviceRuntime& rt = cuda::device_runtime(device);
  const Kernels& k = cuda::device_kernels(device);
  const Shapes sh = shapes_for(small);
  const Stream s = rt.create_stream();
  fmt::print("\nGPU tables: {} (kernels: {}{})\n", rt.describe(), k.name(), small ? ", --small shapes" : "");
  double copy_gbs = 0.0;
  {
    cuda::CopyProbe probe(rt, cuda::copy_probe_bytes(rt));
    std::vector<double> runs;
    for (int r = 0; r < reps; ++r) runs.push_back(probe.gb_per_s_over(small ? 0.0 : 0.05));
    std::sort(runs.begin(), runs.end());
    copy_gbs = runs[runs.size() / 2];
    fmt::print("device copy bandwidth: {:.1f} GB/s (read + write, {} MiB device to device; median of {})\n", copy_gbs,
               probe.bytes() >> 20, reps);
  }
  print_matvec(rt, k, s, sh, reps, copy_gbs);
  print_attention(rt, k, s, sh, reps, copy_gbs);
  print_prefill(rt, k, s, sh, reps);
  rt.destroy_stream(s);
}

}  // namespace ember::eval
