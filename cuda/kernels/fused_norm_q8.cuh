// RMSNorm straight into the quantised matmuls' input: the q8_1 blocks of rms_norm(x) * w,
// without writing the normalised f32 x and reading it back to quantise it. The normalised
// values never leave registers: each thread normalises its four elements and quantises them
// with matmul_q8.cuh's q8_1_quantize_quad. The row's sum of squares is formed exactly as
// launch_rms_norm forms it for the same width (a warp per row up to kRmsWarpMaxCols, else a
// block of rms_norm_threads), so the bytes equal rms_norm then the matmul's quantisation.
// The result is a Q8_1 view (packed rows) that launch_matmul and launch_matmul_glu take as x,
// so one quantisation serves every matmul on the same normalised input (q, k, v; gate, up).
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/device.cuh"
#include "cuda/kernels/matmul_q8.cuh"
#include "cuda/kernels/rms_norm.cuh"

namespace ember::cuda {

namespace {

// The row's q8_1 blocks from its inverse RMS: quads first, first + step, ... (4 elements
// each). Every thread of the caller's warps runs every iteration, so the width-8 shuffles
// see all 32 lanes; step is a multiple of 32.
__device__ __forceinline__ void normed_q8_1_row(const float* xr, const float* w, bool one_plus_w, float inv_rms,
                                                int64_t n_blocks, block_q8_1* out, int first, int step) {
  const int64_t n_quads = n_blocks * kQ8ThreadsPerBlock;
  for (int64_t q0 = 0; q0 < n_quads; q0 += step) {
    const int64_t i = q0 + first;
    const bool active = i < n_quads;
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (active)
      for (int k = 0; k < 4; ++k) v[k] = rms_normed(xr, w, 4 * i + k, inv_rms, one_plus_w);
    q8_1_quantize_quad(v, active, out + i / kQ8ThreadsPerBlock, static_cast<int>(i % kQ8ThreadsPerBlock));
  }
}

// A warp per row, kRmsWarpsPerBlock rows per block (rms_norm_warp_kernel's sums).
__global__ void __launch_bounds__(kRmsWarpsPerBlock* kWarp)
    rms_norm_q8_1_warp_kernel(const float* __restrict__ x, int64_t x_stride, const float* __restrict__ w,
                              int64_t rows, int64_t dim, float eps, bool one_plus_w, block_q8_1* __restrict__ out) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRmsWarpsPerBlock + threadIdx.x / kWarp;
  if (row >= rows) return;  // the whole warp
  const int lane = threadIdx.x % kWarp;
  const float* xr = x + row * x_stride;
  const float sum_sq = warp_sum(rms_sum_sq(xr, dim, lane, kWarp));
  const int64_t n_blocks = dim / kQ8Block;
  normed_q8_1_row(xr, w, one_plus_w, rms_inv(sum_sq, dim, eps), n_blocks, out + row * n_blocks, lane, kWarp);
}

// A block per row (rms_norm_block_kernel's sums).
__global__ void rms_norm_q8_1_block_kernel(const float* __restrict__ x, int64_t x_stride, const float* __restrict__ w,
                                           int64_t dim, float eps, bool one_plus_w, block_q8_1* __restrict__ out) {
  const int64_t row = blockIdx.x;
  const float* xr = x + row * x_stride;
  const float sum_sq = block_sum(rms_sum_sq(xr, dim, threadIdx.x, blockDim.x));
  const int64_t n_blocks = dim / kQ8Block;
  normed_q8_1_row(xr, w, one_plus_w, rms_inv(sum_sq, dim, eps), n_blocks, out + row * n_blocks, threadIdx.x,
                  blockDim.x);
}

}  // namespace

// Bytes of quantize_normed's output for n_tokens rows of cols (whole 32-element blocks).
inline size_t quantize_normed_bytes(int64_t cols, int64_t n_tokens) {
  return static_cast<size_t>(n_tokens) * dtype_row_bytes(DType::Q8_1, cols);
}

// The Q8_1 MatView of quantize_normed's output, as launch_matmul / launch_matmul_glu take x.
inline MatView q8_1_view(const void* xq, int64_t cols, int64_t n_tokens) {
  return MatView{DType::Q8_1, cols, n_tokens, dtype_row_bytes(DType::Q8_1, cols), xq};
}

// xq = the q8_1 blocks (x.rows packed rows of x.cols / 32) of rms_norm(x, w, eps, one_plus_w),
// bit for bit launch_rms_norm then launch_matmul's quantisation of its output. x.cols must
// be whole 32-element blocks; xq is 4-byte aligned and holds quantize_normed_bytes.
inline void launch_quantize_normed(const MatView& x, const float* w, float eps, bool one_plus_w, void* xq,
                                   Stream s) {
  const char* op = "quantize_normed";
  const launch_check::F32Rows xv = launch_check::f32_rows(x, op, "x");
  launch_check::grid_rows(x.rows, op);
  if (x.cols % kQ8Block != 0)
    fail(ErrorKind::InvalidArgument, "cuda {}: {} columns are not whole q8_1 blocks of 32", op, x.cols);
  if (x.rows == 0 || x.cols == 0) return;
  if (xq == nullptr || reinterpret_cast<uintptr_t>(xq) % 4 != 0)
    fail(ErrorKind::InvalidArgument, "cuda {}: the output needs a 4-byte aligned buffer", op);
  block_q8_1* out = static_cast<block_q8_1*>(xq);
  if (x.cols <= kRmsWarpMaxCols) {
    const int64_t blocks = (x.rows + kRmsWarpsPerBlock - 1) / kRmsWarpsPerBlock;
    EMBER_LAUNCH(rms_norm_q8_1_warp_kernel, static_cast<unsigned>(blocks), kRmsWarpsPerBlock * kWarp, 0, s, xv.data,
                 xv.stride, w, x.rows, x.cols, eps, one_plus_w, out);
  } else {
    EMBER_LAUNCH(rms_norm_q8_1_block_kernel, static_cast<unsigned>(x.rows), rms_norm_threads(x.cols), 0, s, xv.data,
                 xv.stride, w, x.cols, eps, one_plus_w, out);
  }
}

}  // namespace ember::cuda
