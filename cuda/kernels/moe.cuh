// The routing and the weighted sum of a mixture-of-experts layer on the device
// (ops::moe_route, ops::moe_combine in src/backend/cpu/moe.cpp), so a decode step's ids and
// weights never leave the device and the step stays one CUDA graph.
//
// Routing: one warp per token, the CPU's arithmetic (softmax sums in double, the same clamp
// and scale; the sum's order differs, so weights agree to rounding), and exactly the CPU's
// choice of experts: score descending, the lower id first on ties. The k best are found in
// k passes, each taking the best expert ranked after the previous pick (a warp reduction
// under that total order), so no array of n_expert values is kept (probabilities are
// recomputed, identically, where read).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backend/ops.h"
#include "cuda/kernel_api.h"
#include "cuda/kernels/device.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

constexpr int kMoeRouteThreads = 128;  // 4 tokens per block
constexpr int kMoeCombineThreads = 256;
constexpr int kMoeWarp = 32;

// The routing's parameters as the kernel reads them (MoeRouting with a device bias).
struct MoeRouteArgs {
  int n_expert, n_used;
  MoeGating gating;
  bool norm_weights;
  float weights_scale;
  const float* bias;  // device [n_expert] or null
};

// probs[i] of the CPU's route_row: mx and inv are the softmax's max and 1 / sum.
__device__ __forceinline__ float moe_prob(MoeGating g, float l, float mx, float inv) {
  if (g == MoeGating::Softmax) return expf(l - mx) * inv;
  if (g == MoeGating::Sigmoid) return 1.0f / (1.0f + expf(-l));
  return l;  // SoftmaxSelected: the logits rank, the chosen are softmaxed after
}

// p = softmax(p) over n values in place, as the CPU's softmax_row.
__device__ __forceinline__ void moe_softmax_in_place(float* p, int n) {
  float mx = p[0];
  for (int i = 1; i < n; ++i) mx = fmaxf(mx, p[i]);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) {
    p[i] = expf(p[i] - mx);
    sum += p[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int i = 0; i < n; ++i) p[i] *= inv;
}

// An expert candidate of a selection pass; id < 0: none.
struct MoePick {
  float score, prob;
  int id;
};

// a ranks before b: the higher score, then the lower id (the CPU's partial_sort order).
__device__ __forceinline__ bool moe_before(const MoePick& a, const MoePick& b) {
  return a.id >= 0 && (b.id < 0 || a.score > b.score || (a.score == b.score && a.id < b.id));
}

// The best pick of the warp, in every lane (the order is total: any tree gives it).
__device__ __forceinline__ MoePick moe_warp_best(MoePick p) {
  for (int m = kMoeWarp / 2; m > 0; m >>= 1) {
    const MoePick o{__shfl_xor_sync(0xffffffffu, p.score, m), __shfl_xor_sync(0xffffffffu, p.prob, m),
                    __shfl_xor_sync(0xffffffffu, p.id, m)};
    if (moe_before(o, p)) p = o;
  }
  return p;
}

// One warp per token: lanes take experts lane, lane + 32, ...; pass j picks the best expert
// ranked after pick j - 1; lane 0 writes the picks and finishes the weights as the CPU does.
__global__ void __launch_bounds__(kMoeRouteThreads)
    moe_route_kernel(const float* __restrict__ logits, int64_t stride, int64_t n_tokens, MoeRouteArgs r,
                     int32_t* __restrict__ ids, float* __restrict__ weights) {
  const int lane = threadIdx.x % kMoeWarp;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * (kMoeRouteThreads / kMoeWarp) + threadIdx.x / kMoeWarp;
  if (t >= n_tokens) return;  // the whole warp: no block-wide barrier below
  const float* l = logits + t * stride;
  const int n = r.n_expert, k = r.n_used;
  float mx = 0.0f, inv = 1.0f;
  if (r.gating == MoeGating::Softmax) {
    mx = -INFINITY;
    for (int i = lane; i < n; i += kMoeWarp) mx = fmaxf(mx, l[i]);
    for (int m = kMoeWarp / 2; m > 0; m >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, m));
    double sum = 0.0;
    for (int i = lane; i < n; i += kMoeWarp) sum += expf(l[i] - mx);
    for (int m = kMoeWarp / 2; m > 0; m >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, m);
    inv = static_cast<float>(1.0 / sum);
  }
  int32_t* id = ids + t * k;
  float* w = weights + t * k;
  MoePick prev{0.0f, 0.0f, -1};
  for (int j = 0; j < k; ++j) {
    MoePick best{0.0f, 0.0f, -1};
    for (int i = lane; i < n; i += kMoeWarp) {
      const float p = moe_prob(r.gating, l[i], mx, inv);
      const MoePick c{p + (r.bias ? r.bias[i] : 0.0f), p, i};
      if ((prev.id < 0 || moe_before(prev, c)) && moe_before(c, best)) best = c;
    }
    prev = moe_warp_best(best);
    if (lane == 0) {
      id[j] = prev.id;
      w[j] = prev.prob;
    }
  }
  if (lane != 0) return;
  if (r.gating == MoeGating::SoftmaxSelected) moe_softmax_in_place(w, k);
  if (r.norm_weights) {
    float sum = 0.0f;
    for (int j = 0; j < k; ++j) sum += w[j];
    sum = fmaxf(sum, 6.103515625e-5f);  // llama.cpp's clamp: the smallest normal f16
    for (int j = 0; j < k; ++j) w[j] /= sum;
  }
  if (r.weights_scale != 0.0f && r.weights_scale != 1.0f)
    for (int j = 0; j < k; ++j) w[j] *= r.weights_scale;
}

// ids/weights (device, tokens x r.n_used) from the router logits (tokens x r.n_expert);
// r.selection_bias, when set, is device memory.
inline void launch_moe_route(const MatView& logits, const MoeRouting& r, int32_t* ids, float* weights, Stream s) {
  if (logits.type != DType::F32 || logits.cols != r.n_expert || r.n_used <= 0 || r.n_used > r.n_expert ||
      logits.row_stride % sizeof(float) != 0)
    fail(ErrorKind::InvalidArgument, "cuda moe_route: {} logits per row for {} experts, {} used", logits.cols,
         r.n_expert, r.n_used);
  if (logits.rows == 0) return;
  const MoeRouteArgs a{r.n_expert, r.n_used, r.gating, r.norm_weights, r.weights_scale, r.selection_bias};
  constexpr int kTokensPerBlock = kMoeRouteThreads / kMoeWarp;
  const unsigned blocks = static_cast<unsigned>((logits.rows + kTokensPerBlock - 1) / kTokensPerBlock);
  EMBER_LAUNCH(moe_route_kernel, dim3(blocks), kMoeRouteThreads, 0, s, static_cast<const float*>(logits.data),
               static_cast<int64_t>(logits.row_stride / sizeof(float)), logits.rows, a, ids, weights);
}

// out[t] = sum_j weights[t*k + j] * experts[t*k + j] (j ascending) + g * shared[t], as
// ops::moe_combine; one thread per element.
__global__ void __launch_bounds__(kMoeCombineThreads)
    moe_combine_kernel(const float* __restrict__ experts, int64_t e_stride, const float* __restrict__ weights, int k,
                       const float* __restrict__ shared, int64_t s_stride, const float* __restrict__ shared_gate,
                       int64_t g_stride, float* __restrict__ out, int64_t o_stride, int64_t cols) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t t = blockIdx.y;
  if (i >= cols) return;
  const float* w = weights + t * k;
  float o = w[0] * experts[(t * k) * e_stride + i];
  for (int j = 1; j < k; ++j) o += w[j] * experts[(t * k + j) * e_stride + i];
  if (shared) {
    float g = 1.0f;
    if (shared_gate) g = 1.0f / (1.0f + expf(-shared_gate[t * g_stride]));
    o += g * shared[t * s_stride + i];
  }
  out[t * o_stride + i] = o;
}

inline void launch_moe_combine(const MatView& experts, const float* weights, int n_used, const MatView& shared,
                               const MatView& shared_gate, F32Mat out, Stream s) {
  const bool f32 = experts.type == DType::F32 && (!shared.data || shared.type == DType::F32) &&
                   (!shared_gate.data || shared_gate.type == DType::F32);
  if (!f32 || n_used < 1 || experts.cols != out.cols || experts.rows != out.rows * n_used ||
      (shared.data && (shared.rows != out.rows || shared.cols != out.cols)) ||
      (shared_gate.data && (shared_gate.rows != out.rows || !shared.data)) || out.rows > 65535)
    fail(ErrorKind::InvalidArgument, "cuda moe_combine: {}x{} expert rows, {} used, for {}x{}", experts.rows,
         experts.cols, n_used, out.rows, out.cols);
  if (out.rows == 0 || out.cols == 0) return;
  const auto stride = [](const MatView& v) { return static_cast<int64_t>(v.row_stride / sizeof(float)); };
  const dim3 grid(static_cast<unsigned>((out.cols + kMoeCombineThreads - 1) / kMoeCombineThreads),
                  static_cast<unsigned>(out.rows));
  EMBER_LAUNCH(moe_combine_kernel, grid, kMoeCombineThreads, 0, s, static_cast<const float*>(experts.data),
               stride(experts), weights, n_used, static_cast<const float*>(shared.data), stride(shared),
               static_cast<const float*>(shared_gate.data), stride(shared_gate), out.data, out.stride, out.cols);
}

}  // namespace

}  // namespace ember::cuda
