// RMSNorm kernel: one thread block per row. Each thread accumulates the squares of a strided
// slice of the row (coalesced loads), a warp-shuffle + shared-memory reduction gives every
// thread the row's sum, then each thread scales its slice. The row is read twice (the second
// read usually hits L2), which keeps the kernel simple and bandwidth-bound.
// Device code only, compiled by nvcc for cuda/rms_norm.cu and as C++ for the CPU tests.
#pragma once
#include <cstdint>

#include "cuda/kernels/device.cuh"

namespace ember::cuda {

namespace {

constexpr int kWarp = 32;
constexpr int kMaxThreads = 1024;

// Sum of v over the block, returned to every thread. blockDim.x must be a multiple of 32.
__device__ float block_sum(float v) {
  __shared__ float warp_sums[kMaxThreads / kWarp];
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  const int n_warps = blockDim.x / kWarp;
  v = lane < n_warps ? warp_sums[lane] : 0.0f;
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// No __restrict__ on x/y: in-place use (y == x) is allowed, every read of the row happens
// before block_sum's barrier and every write after it.
__global__ void rms_norm_f32_kernel(const float* x, const float* __restrict__ w, float* y, int64_t dim, float eps,
                                    bool one_plus_w) {
  const int64_t row = blockIdx.x;
  const float* xr = x + row * dim;
  float* yr = y + row * dim;
  float sum_sq = 0.0f;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    const float v = xr[i];
    sum_sq = fmaf(v, v, sum_sq);
  }
  sum_sq = block_sum(sum_sq);
  const float inv_rms = rsqrtf(sum_sq / static_cast<float>(dim) + eps);
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
    const float g = w == nullptr ? 1.0f : one_plus_w ? 1.0f + w[i] : w[i];
    yr[i] = xr[i] * inv_rms * g;
  }
}

// The launch: one block of rms_norm_threads(dim) threads per row, no dynamic shared memory.
inline int rms_norm_threads(int64_t dim) {
  if (dim >= kMaxThreads) return kMaxThreads;
  return static_cast<int>((dim + kWarp - 1) / kWarp * kWarp);
}

}  // namespace

}  // namespace ember::cuda
