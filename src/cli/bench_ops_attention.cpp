// `ember bench-ops` attention table: ops::attention on the heads of common model shapes.
//
// Decode attends one query to a ring filled to the depth, once per layer of kLayers layers
// in turn (each layer its own ring, as in a model, so the rings do not all stay in L1/L2);
// a figure is the median over --reps rounds of the time per call. Attention reads little
// (a ring of depth x KV heads x head_dim x 4 bytes for K and V in f16) and computes about
// 4 x depth x query heads x head_dim flops, so these are compute figures, not a roofline.
#include "cli/bench_ops_attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "util/thread_pool.h"
#include "backend/ops.h"
#include "sampling/rng.h"
#include "tensor/dtype.h"

namespace ember::cli {

namespace {

constexpr int kLayers = 4;

struct Heads {
  const char* like;
  int n_head, n_head_kv, head_dim;
};

// Rings of kLayers layers filled with `depth` keys at positions 0.., in slot order.
struct Rings {
  int64_t n_slots;
  size_t row_bytes;
  std::vector<std::vector<uint8_t>> k, v;
  std::vector<int32_t> pos;

  Rings(const Heads& h, int64_t depth) : n_slots(depth) {
    const int64_t row = static_cast<int64_t>(h.n_head_kv) * h.head_dim;
    row_bytes = dtype_row_bytes(DType::F16, row);
    std::vector<float> values(static_cast<size_t>(row));
    Rng rng(12345);
    for (int l = 0; l < kLayers; ++l) {
      k.emplace_back(static_cast<size_t>(depth) * row_bytes);
      v.emplace_back(static_cast<size_t>(depth) * row_bytes);
      for (int64_t slot = 0; slot < depth; ++slot)
        for (auto* cache : {&k.back(), &v.back()}) {
          for (float& x : values) x = static_cast<float>(2.0 * rng.uniform01() - 1.0);
          ops::store_row(values.data(), row, DType::F16, cache->data() + slot * row_bytes);
        }
    }
    pos.resize(static_cast<size_t>(depth));
    for (int64_t i = 0; i < depth; ++i) pos[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  }
  KVView view(int layer) const {
    return KVView{DType::F16, DType::F16, k[layer].data(), v[layer].data(), row_bytes, row_bytes, pos.data(), n_slots};
  }
};

// Median over `reps` rounds of the seconds per call, each round one call per layer.
double seconds_per_call(ThreadPool& pool, const Heads& h, const Rings& rings, int n_q, int reps) {
  const int64_t cols = static_cast<int64_t>(h.n_head) * h.head_dim;
  std::vector<float> q(static_cast<size_t>(n_q * cols), 0.01f), out(q.size());
  std::vector<int32_t> q_pos(static_cast<size_t>(n_q));
  for (int i = 0; i < n_q; ++i) q_pos[static_cast<size_t>(i)] = static_cast<int32_t>(rings.n_slots - n_q + i);
  const AttentionParams p{h.n_head, h.n_head_kv, h.head_dim, 0.125f, 0, 0.0f};
  const MatView qv{DType::F32, cols, n_q, static_cast<size_t>(cols) * sizeof(float), q.data()};
  const F32Mat ov{out.data(), cols, n_q, cols};
  auto round = [&] {
    for (int l = 0; l < kLayers; ++l) ops::attention(pool, qv, q_pos.data(), rings.view(l), p, ov);
  };
  round();  // warm-up
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    round();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / kLayers);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

void print_attention_table(int threads, int reps) {
  const Heads shapes[] = {{"TinyLlama 1.1B", 32, 4, 64}, {"Llama 3 8B", 32, 8, 128}, {"Llama 2 7B (MHA)", 32, 32, 128}};
  fmt::print("\nattention (f16 KV cache, {} threads; one call per layer over {} layers' rings, median of {} rounds)\n",
             threads, kLayers, reps);
  fmt::print("| heads (q:kv x dim) | like | test | us/call |\n|---|---|---|---:|\n");
  ThreadPool pool(threads);
  for (const Heads& h : shapes) {
    for (int64_t depth : {64, 512, 2048}) {
      const Rings rings(h, depth);
      fmt::print("| {}:{} x {} | {} | decode @ depth {} | {:.1f} |\n", h.n_head, h.n_head_kv, h.head_dim, h.like, depth,
                 seconds_per_call(pool, h, rings, 1, reps) * 1e6);
    }
  }
  // Prefill through both kernels: GQA's rows in lanes (groups of 8 and 4), MHA's each in
  // its own arithmetic.
  for (const Heads& h : shapes) {
    const Rings rings(h, 512);
    fmt::print("| {}:{} x {} | {} | prefill of 512 tokens | {:.1f} |\n", h.n_head, h.n_head_kv, h.head_dim, h.like,
               seconds_per_call(pool, h, rings, 512, std::max(3, reps / 2)) * 1e6);
  }
}

}  // namespace ember::cli
