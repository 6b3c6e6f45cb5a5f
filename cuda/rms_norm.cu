// RMSNorm kernel: one thread block per row. Each thread accumulates the squares of a strided
// slice of the row (coalesced loads), a warp-shuffle + shared-memory reduction gives every
// thread the row's sum, then each thread scales its slice. The row is read twice (the second
// read usually hits L2), which keeps the kernel simple and bandwidth-bound.
#include <climits>
#include <vector>

#include "backend/cuda_api.h"
#include "cuda/check.h"
#include "cuda/device_buffer.h"
#include "cuda/rms_norm.h"
#include "util/error.h"

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

int threads_for(int64_t dim) {
  if (dim >= kMaxThreads) return kMaxThreads;
  return static_cast<int>((dim + kWarp - 1) / kWarp * kWarp);
}

void check_sizes(int64_t rows, int64_t dim) {
  if (rows <= 0 || dim <= 0 || rows > INT_MAX)
    fail(ErrorKind::InvalidArgument, "cuda rms_norm: bad shape {} rows x {} (rows 1..{}, dim >= 1)", rows, dim, INT_MAX);
}

}  // namespace

void launch_rms_norm_f32(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps,
                         bool one_plus_w, cudaStream_t stream) {
  check_sizes(rows, dim);
  rms_norm_f32_kernel<<<static_cast<unsigned>(rows), threads_for(dim), 0, stream>>>(x, w, y, dim, eps, one_plus_w);
  EMBER_CUDA_CHECK_LAUNCH();
}

void rms_norm_f32(const float* x_host, const float* w_host, float* y_host, int64_t rows, int64_t dim, float eps,
                  bool one_plus_w) {
  check_sizes(rows, dim);
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(dim);
  DeviceBuffer<float> x(n), y(n), w(w_host ? static_cast<size_t>(dim) : 0);
  x.upload(x_host, n);
  if (w_host) w.upload(w_host, static_cast<size_t>(dim));
  launch_rms_norm_f32(x.get(), w_host ? w.get() : nullptr, y.get(), rows, dim, eps, one_plus_w, nullptr);
  y.download(y_host, n);
}

}  // namespace ember::cuda
