// RMSNorm kernels, two shapes of one row computation (sum of squares, then scale):
//  - a warp per row for rows of up to kRmsWarpMaxCols (per-head q/k norms of 64..256, small
//    models): lanes stride the row, a shuffle reduction, no barrier, several rows per block;
//  - a thread block per row for wider rows: warp shuffles + shared memory (block_sum).
// Loads are coalesced; the row is read twice (the second read usually hits L1/L2), which
// keeps the kernels simple and bandwidth-bound. Each thread writes only the elements it read
// itself, after the reduction, so y may alias x (in place, same layout).
// Device code compiled by nvcc and as C++ for the CPU tests (cuda/cpu_exec).
#pragma once
#include <cstdint>

#include "cuda/kernels/device.cuh"
#include "cuda/kernels/elementwise.cuh"

namespace ember::cuda {

namespace {

constexpr int kMaxThreads = 1024;
constexpr int kRmsWarpMaxCols = 1024;
constexpr int kRmsWarpsPerBlock = 4;

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum of v over the block, returned to every thread. blockDim.x must be a multiple of 32.
// One call per kernel: a second would need a barrier before warp_sums is rewritten.
__device__ float block_sum(float v) {
  __shared__ float warp_sums[kMaxThreads / kWarp];
  v = warp_sum(v);
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  const int n_warps = blockDim.x / kWarp;
  return warp_sum(lane < n_warps ? warp_sums[lane] : 0.0f);
}

// The sum of squares of elements first, first + step, ... of a row.
__device__ __forceinline__ float rms_sum_sq(const float* xr, int64_t dim, int first, int step) {
  float sum_sq = 0.0f;
  for (int64_t i = first; i < dim; i += step) sum_sq = fmaf(xr[i], xr[i], sum_sq);
  return sum_sq;
}

// Element i of the normalised row: x * inv_rms * (w, 1 + w or 1).
__device__ __forceinline__ float rms_normed(const float* xr, const float* w, int64_t i, float inv_rms,
                                            bool one_plus_w) {
  const float g = w == nullptr ? 1.0f : one_plus_w ? 1.0f + w[i] : w[i];
  return xr[i] * inv_rms * g;
}

// y = rms_normed(x) on the same elements.
__device__ __forceinline__ void rms_scale(const float* xr, const float* w, float* yr, int64_t dim, float inv_rms,
                                          bool one_plus_w, int first, int step) {
  for (int64_t i = first; i < dim; i += step) yr[i] = rms_normed(xr, w, i, inv_rms, one_plus_w);
}

__device__ __forceinline__ float rms_inv(float sum_sq, int64_t dim, float eps) {
  return rsqrtf(sum_sq / static_cast<float>(dim) + eps);
}

// Strided rows (strides in floats), one block per row. No __restrict__ on x/y: in place is allowed.
__global__ void rms_norm_block_kernel(const float* x, int64_t x_stride, const float* __restrict__ w, float* y,
                                      int64_t y_stride, int64_t dim, float eps, bool one_plus_w) {
  const int64_t row = blockIdx.x;
  const float* xr = x + row * x_stride;
  const float sum_sq = block_sum(rms_sum_sq(xr, dim, threadIdx.x, blockDim.x));
  rms_scale(xr, w, y + row * y_stride, dim, rms_inv(sum_sq, dim, eps), one_plus_w, threadIdx.x, blockDim.x);
}

// Strided rows, one warp per row, kRmsWarpsPerBlock rows per block.
__global__ void __launch_bounds__(kRmsWarpsPerBlock* kWarp)
    rms_norm_warp_kernel(const float* x, int64_t x_stride, const float* __restrict__ w, float* y, int64_t y_stride,
                         int64_t rows, int64_t dim, float eps, bool one_plus_w) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRmsWarpsPerBlock + threadIdx.x / kWarp;
  if (row >= rows) return;  // the whole warp: no collective is left waiting
  const int lane = threadIdx.x % kWarp;
  const float* xr = x + row * x_stride;
  const float sum_sq = warp_sum(rms_sum_sq(xr, dim, lane, kWarp));
  rms_scale(xr, w, y + row * y_stride, dim, rms_inv(sum_sq, dim, eps), one_plus_w, lane, kWarp);
}

// Threads of rms_norm_block_kernel's blocks: a warp multiple, up to 1024.
inline int rms_norm_threads(int64_t dim) {
  if (dim >= kMaxThreads) return kMaxThreads;
  return static_cast<int>((dim + kWarp - 1) / kWarp * kWarp);
}

}  // namespace

// ops::rms_norm on the device: y = x / sqrt(mean(x^2) + eps) * (w, 1 + w, or 1 when w is null).
inline void launch_rms_norm(const MatView& x, const float* w, float eps, bool one_plus_w, F32Mat y, Stream s) {
  const launch_check::F32Rows xv = launch_check::f32_rows(x, "rms_norm", "x");
  launch_check::f32_mat(y, "rms_norm", "y");
  launch_check::shape(y.rows, y.cols, x.rows, x.cols, "rms_norm", "y");
  launch_check::grid_rows(x.rows, "rms_norm");
  if (x.rows == 0 || x.cols == 0) return;
  if (x.cols <= kRmsWarpMaxCols) {
    const int64_t blocks = (x.rows + kRmsWarpsPerBlock - 1) / kRmsWarpsPerBlock;
    EMBER_LAUNCH(rms_norm_warp_kernel, static_cast<unsigned>(blocks), kRmsWarpsPerBlock * kWarp, 0, s, xv.data,
                 xv.stride, w, y.data, y.stride, x.rows, x.cols, eps, one_plus_w);
  } else {
    EMBER_LAUNCH(rms_norm_block_kernel, static_cast<unsigned>(x.rows), rms_norm_threads(x.cols), 0, s, xv.data,
                 xv.stride, w, y.data, y.stride, x.cols, eps, one_plus_w);
  }
}

}  // namespace ember::cuda
