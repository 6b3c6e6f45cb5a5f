// The expert matmul (ops::matmul_id, ggml's mul_mat_id) and its launchers: slot s = t*n_used + j
// of y is x's row (t, or s when x has a row per slot) times expert ids[s]'s weights^T.
//
// The experts of one 3-D tensor sit in one device allocation, expert e at base + e *
// expert_bytes (cuda/weight_store.cpp uploads them so), so a kernel reaches an expert by
// its id alone: ids stay on the device and nothing waits for the host.
//  - One token (n_slots == n_used, decode): grid (row blocks, n_used), block column j
//    computes slot j from expert ids[j] directly: each chosen expert's rows read once.
//  - Otherwise (prefill, batched decode): moe_group_kernel sorts the slots by expert into the
//    scratch (bounds[e] .. bounds[e + 1] of `order`, ascending slots), then grid (row blocks,
//    n_expert, passes): a warp takes up to 16 of its expert's slots, reading the weight row
//    once for them. The grid is sized by the worst case (every expert could hold every
//    slot); blocks past their expert's slots exit at once. (Many empty blocks in a long
//    prefill: a device-side count of passes per expert would trim them.)
// Both paths form a slot's sum with the same per-lane unit order and the same warp tree
// (matmul.cuh's step_gather and mm_warp_sums, bitwise the same whatever NT), so a row's
// result does not depend on the path, its pass or the other rows (batch invariance).
// Quantised weights take q8_1 activations (quantised here from f32, or given as a Q8_1 view);
// float weights take f32 rows, as matmul.cuh.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "backend/ops.h"
#include "cuda/kernel_api.h"
#include "cuda/kernels/device.cuh"
#include "cuda/kernels/matmul.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

constexpr int kMoeMaxExperts = 512;   // model/moe.cpp's kMaxExperts
constexpr int kMoeGroupThreads = 256;
// 16, not matmul.cuh's 32: the slots' x rows take a register each, and 32 spill on sm_90.
constexpr int kMaxSlotsPerPass = 16;

// A warp's sum for one slot: lanes with `writes` hold the sum of token t of the pass.
struct MidSum {
  float sum;
  int t;
  bool writes;
};

// One warp's sums of weight row wr with n_tok (<= NT) activation rows xr[t] of x.
template <class Src, int NT>
__device__ __forceinline__ MidSum mid_warp_row(const uint8_t* wr, int64_t units, const typename Src::Act* x,
                                               int64_t x_stride, const int32_t (&xr)[NT], int n_tok, int lane) {
  float acc[NT];
#pragma unroll
  for (int i = 0; i < NT; ++i) acc[i] = 0.0f;
  for (int64_t u = lane; u < units; u += kQ8Warp) Src::template step_gather<NT>(wr, u, x, x_stride, xr, n_tok, acc);
  MidSum r;
  r.sum = mm_warp_sums<NT>(acc, lane);
  r.t = mm_reduced_token<NT>(lane);
  r.writes = lane % (kQ8Warp / NT) == 0 && r.t < n_tok;
  return r;
}

// Decode: slot blockIdx.y through expert ids[slot] (x row slot / x_div).
template <class Src>
__global__ void __launch_bounds__(kMatmulWarps * kQ8Warp)
    matmul_id_direct_kernel(const uint8_t* __restrict__ w, size_t expert_bytes, int n_expert, size_t w_stride,
                            int64_t n_rows, int64_t units, const typename Src::Act* __restrict__ x, int64_t x_stride,
                            int x_div, const int32_t* __restrict__ ids, float* __restrict__ y, int64_t y_stride) {
  const int lane = threadIdx.x % kQ8Warp;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kMatmulWarps + threadIdx.x / kQ8Warp;
  const int64_t s = blockIdx.y;
  const int e = ids[s];
  if (row >= n_rows || e < 0 || e >= n_expert) return;  // whole warps: no barrier below
  const int32_t xr[1] = {static_cast<int32_t>(s / x_div)};
  const MidSum r = mid_warp_row<Src, 1>(w + e * expert_bytes + row * w_stride, units, x, x_stride, xr, 1, lane);
  if (r.writes) y[s * y_stride + row] = r.sum;
}

// The slots of each expert, ascending: order[bounds[e] .. bounds[e + 1]). One block; ids out
// of range belong to no expert (their rows of y are left as they were).
__global__ void __launch_bounds__(kMoeGroupThreads)
    moe_group_kernel(const int32_t* __restrict__ ids, int64_t n_slots, int n_expert, int32_t* __restrict__ bounds,
                     int32_t* __restrict__ order) {
  __shared__ int32_t start[kMoeMaxExperts + 1];
  for (int e = threadIdx.x; e < n_expert; e += blockDim.x) {
    int32_t n = 0;
    for (int64_t s = 0; s < n_slots; ++s) n += ids[s] == e;
    start[e + 1] = n;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    start[0] = 0;
    for (int e = 0; e < n_expert; ++e) start[e + 1] += start[e];
  }
  __syncthreads();
  for (int e = threadIdx.x; e < n_expert; e += blockDim.x) {
    int32_t at = start[e];
    for (int64_t s = 0; s < n_slots; ++s)
      if (ids[s] == e) order[at++] = static_cast<int32_t>(s);
  }
  for (int e = threadIdx.x; e <= n_expert; e += blockDim.x) bounds[e] = start[e];
}

// Prefill and batches: pass blockIdx.z (slots NT * z on) of expert blockIdx.y. One pass per
// block and no loop over passes: ptxas spilled a loop of them to local memory.
template <class Src, int NT>
__global__ void __launch_bounds__(kMatmulWarps * kQ8Warp)
    matmul_id_grouped_kernel(const uint8_t* __restrict__ w, size_t expert_bytes, size_t w_stride, int64_t n_rows,
                             int64_t units, const typename Src::Act* __restrict__ x, int64_t x_stride, int x_div,
                             const int32_t* __restrict__ bounds, const int32_t* __restrict__ order,
                             float* __restrict__ y, int64_t y_stride) {
  const int lane = threadIdx.x % kQ8Warp;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kMatmulWarps + threadIdx.x / kQ8Warp;
  const int e = blockIdx.y;
  const int32_t p = bounds[e] + static_cast<int32_t>(blockIdx.z) * NT, end = bounds[e + 1];
  if (row >= n_rows || p >= end) return;  // whole warps (the block's, for an empty pass)
  const int n_tok = min(NT, end - p);
  int32_t xr[NT];
#pragma unroll
  for (int i = 0; i < NT; ++i) xr[i] = i < n_tok ? order[p + i] / x_div : 0;
  const MidSum r = mid_warp_row<Src, NT>(w + e * expert_bytes + row * w_stride, units, x, x_stride, xr, n_tok, lane);
  // The slot is read again rather than indexed out of xr: a register array stays in registers.
  if (r.writes) y[static_cast<int64_t>(order[p + r.t]) * y_stride + row] = r.sum;
}

// Scratch layout: [q8_1 activations][bounds: n_expert + 1][order: n_slots], each part a
// multiple of 256 bytes.
inline size_t mid_align(size_t n) { return (n + 255) / 256 * 256; }
inline size_t mid_q8_bytes(const MatView& w, int64_t x_rows) { return mid_align(matmul_scratch_bytes(w, x_rows)); }
inline size_t matmul_id_scratch_bytes(const ExpertSet& e, int64_t x_rows, int64_t n_slots) {
  return mid_q8_bytes(e.w0, x_rows) + mid_align(static_cast<size_t>(e.n_expert + 1) * sizeof(int32_t)) +
         mid_align(static_cast<size_t>(n_slots) * sizeof(int32_t));
}

// f(std::integral_constant<int, NT>) for the slots per pass: the smallest power of two that
// covers n_slots, at most kMaxSlotsPerPass (no wider kernel is instantiated).
template <class F>
void mid_with_slots_per_pass(int64_t n_slots, F&& f) {
  if (n_slots <= 2) return f(std::integral_constant<int, 2>{});
  if (n_slots <= 4) return f(std::integral_constant<int, 4>{});
  if (n_slots <= 8) return f(std::integral_constant<int, 8>{});
  static_assert(kMaxSlotsPerPass == 16);
  f(std::integral_constant<int, 16>{});
}

// The grouped path's slot lists, in the scratch after the activations.
struct SlotGroups {
  int32_t* bounds;  // n_expert + 1
  int32_t* order;   // n_slots
};

template <class Src>
void launch_matmul_id_src(const ExpertSet& e, const typename Src::Act* x, int64_t x_stride, int x_div,
                          const int32_t* ids, int64_t n_slots, int n_used, F32Mat y, SlotGroups g, Stream s) {
  const MatView& w = e.w0;
  const auto* wd = static_cast<const uint8_t*>(w.data);
  const unsigned row_blocks = static_cast<unsigned>((w.rows + kMatmulWarps - 1) / kMatmulWarps);
  const int64_t units = w.cols / Src::kUnit;
  if (n_slots == n_used) {
    EMBER_LAUNCH(matmul_id_direct_kernel<Src>, dim3(row_blocks, static_cast<unsigned>(n_slots)),
                 kMatmulWarps * kQ8Warp, 0, s, wd, e.expert_bytes, e.n_expert, w.row_stride, w.rows, units, x,
                 x_stride, x_div, ids, y.data, y.stride);
    return;
  }
  EMBER_LAUNCH(moe_group_kernel, dim3(1), kMoeGroupThreads, 0, s, ids, n_slots, e.n_expert, g.bounds, g.order);
  // Passes as wide as the busiest expert could need, at most kMaxSlotsPerPass slots.
  mid_with_slots_per_pass(n_slots, [&](auto nt) {
    constexpr int NT = decltype(nt)::value;
    // Passes for the worst case, one expert holding every slot; the others' extra blocks exit.
    const auto passes = static_cast<unsigned>((n_slots + NT - 1) / NT);
    EMBER_LAUNCH((matmul_id_grouped_kernel<Src, NT>), dim3(row_blocks, static_cast<unsigned>(e.n_expert), passes),
                 kMatmulWarps * kQ8Warp, 0, s, wd, e.expert_bytes, w.row_stride, w.rows, units, x, x_stride, x_div,
                 static_cast<const int32_t*>(g.bounds), static_cast<const int32_t*>(g.order), y.data, y.stride);
  });
}

inline void check_matmul_id_args(const ExpertSet& e, const MatView& x, int64_t n_slots, int n_used, const F32Mat& y) {
  if (e.n_expert < 1 || e.n_expert > kMoeMaxExperts || n_used < 1 || n_used > e.n_expert)
    fail(ErrorKind::InvalidArgument, "cuda matmul_id: {} experts, {} used", e.n_expert, n_used);
  if (e.n_expert > 1 && e.expert_bytes < static_cast<size_t>(e.w0.rows) * e.w0.row_stride)
    fail(ErrorKind::InvalidArgument, "cuda matmul_id: experts {} bytes apart overlap", e.expert_bytes);
  // The shapes as one matmul of x's rows (y's row count is checked below, per slot).
  check_matmul_args(e.w0, x, F32Mat{y.data, y.cols, x.rows, y.stride});
  if (x.rows != n_slots && x.rows * n_used != n_slots)
    fail(ErrorKind::InvalidArgument, "cuda matmul_id: {} rows of x for {} slots of {} experts", x.rows, n_slots, n_used);
  if (y.rows != n_slots) fail(ErrorKind::InvalidArgument, "cuda matmul_id: y has {} rows for {} slots", y.rows, n_slots);
  if (n_slots > int64_t{65535} * 2) fail(ErrorKind::InvalidArgument, "cuda matmul_id: {} slots are too many", n_slots);
}

// y (n_slots = x.rows or x.rows * n_used rows) = matmul_id(experts, x, ids); ids a device
// array of n_slots expert numbers; scratch holds matmul_id_scratch_bytes(e, x.rows, n_slots).
inline void launch_matmul_id(const ExpertSet& e, const MatView& x, const int32_t* ids, int n_used, F32Mat y,
                             void* scratch, Stream s) {
  const int64_t n_slots = y.rows;
  check_matmul_id_args(e, x, n_slots, n_used, y);
  if (n_slots == 0 || e.w0.rows == 0) return;
  if (scratch == nullptr || reinterpret_cast<uintptr_t>(scratch) % 4 != 0)
    fail(ErrorKind::InvalidArgument, "cuda matmul_id: needs a 4-byte aligned scratch of {} bytes",
         matmul_id_scratch_bytes(e, x.rows, n_slots));
  auto* base = static_cast<uint8_t*>(scratch);
  const size_t q8 = mid_q8_bytes(e.w0, x.rows);
  const SlotGroups g{reinterpret_cast<int32_t*>(base + q8),
                     reinterpret_cast<int32_t*>(base + q8 + mid_align((e.n_expert + 1) * sizeof(int32_t)))};
  const int x_div = x.rows == n_slots ? 1 : n_used;
  if (matmul_float_type(e.w0.type)) {
    const int64_t xs = static_cast<int64_t>(x.row_stride / sizeof(float));
    return mm_with_float_type(e.w0.type, [&](auto t) {
      launch_matmul_id_src<FloatRows<decltype(t)::value>>(e, static_cast<const float*>(x.data), xs, x_div, ids,
                                                          n_slots, n_used, y, g, s);
    });
  }
  const block_q8_1* xq = static_cast<const block_q8_1*>(x.data);
  if (x.type != DType::Q8_1) {
    auto* q = reinterpret_cast<block_q8_1*>(base);
    launch_quantize_q8_1(x, q, s);
    xq = q;
  }
  mm_with_q8_type(e.w0.type, [&](auto t) {
    launch_matmul_id_src<Q8Rows<decltype(t)::value>>(e, xq, e.w0.cols / kQ8Block, x_div, ids, n_slots, n_used, y, g,
                                                     s);
  });
}

}  // namespace

}  // namespace ember::cuda
