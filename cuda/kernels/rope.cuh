// Rotary position embedding in place (ops::rope): one thread block per row (token). The
// block first fills a shared table of the row's n_rot/2 angles' cos/sin, then every thread
// rotates pairs of every head from it, so the costly double-precision trig runs once per
// (token, pair) and not once per head.
// The angles are backend/rope_angle.h's, as backend/cpu/rope.cpp forms them: theta in double
// (at position 32k an f32 angle is off by ~1e-3 rad) with the variants of RopeParams (frequency
// factors read from device memory, YaRN's ramp), cos/sin rounded to float and scaled by
// mscale, the rotation in float. sin/cos go through sincospi(theta / pi):
// CUDA's double sin/cos carry a slow range-reduction path with a stack frame (local memory,
// which the build forbids); sincospi reduces exactly, and theta / pi costs one rounding.
#pragma once
#include <cmath>
#include <cstdint>

#include "backend/rope_angle.h"
#include "cuda/kernels/device.cuh"
#include "cuda/kernels/elementwise.cuh"

namespace ember::cuda {

namespace {

constexpr int kRopeMaxThreads = 256;

// sin(pi x) and cos(pi x). cpu_exec lacks sincospi: x mod 2 is exact, then pi * r rounds once.
__device__ __forceinline__ void rope_sincospi(double x, double* s, double* c) {
#if defined(__CUDACC__)
  sincospi(x, s, c);
#else
  const double kPi = 3.14159265358979323846;
  const double r = x - 2.0 * std::nearbyint(0.5 * x);
  *s = std::sin(kPi * r);
  *c = std::cos(kPi * r);
#endif
}

// Fills cos_sin (n_rot floats: cos of pair i at [i], sin at [n_rot / 2 + i]) for position
// `at`, the block's threads striding the pairs; the caller syncs before reading it.
__device__ __forceinline__ void rope_fill_cos_sin(float* cos_sin, int32_t at, const RopeParams& p) {
  const int half = p.n_rot / 2;
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    const double theta = rope_angle(p, i, at, p.freq_factors ? p.freq_factors[i] : 1.0f);
    double s, c;
    rope_sincospi(theta * 0.31830988618379067154, &s, &c);  // theta / pi
    cos_sin[i] = static_cast<float>(c) * p.mscale;
    cos_sin[half + i] = static_cast<float>(s) * p.mscale;
  }
}

// Rotates every head of row xr in place from the table, the block's threads striding the
// pairs; each pair is read and written by one thread.
__device__ __forceinline__ void rope_rotate_row(float* xr, int n_heads, int head_dim, int n_rot, bool neox,
                                                const float* cos_sin) {
  const int half = n_rot / 2;
  for (int j = threadIdx.x; j < n_heads * half; j += blockDim.x) {
    const int h = j / half;
    const int i = j - h * half;
    float* head = xr + static_cast<int64_t>(h) * head_dim;
    // (a, b) = (a cos - b sin, a sin + b cos) on (x[2i], x[2i+1]) or (x[i], x[i + half]).
    float& a = head[neox ? i : 2 * i];
    float& b = head[neox ? i + half : 2 * i + 1];
    const float a0 = a, b0 = b, c = cos_sin[i], s = cos_sin[half + i];
    a = a0 * c - b0 * s;
    b = a0 * s + b0 * c;
  }
}

// Dynamic shared memory: the n_rot floats of rope_fill_cos_sin.
__global__ void rope_kernel(float* x, int64_t stride, int n_heads, int head_dim, const int32_t* __restrict__ pos,
                            RopeParams p) {
  EMBER_DYNAMIC_SHARED(float, cos_sin);
  const int64_t row = blockIdx.x;
  rope_fill_cos_sin(cos_sin, pos[row], p);
  __syncthreads();
  rope_rotate_row(x + row * stride, n_heads, head_dim, p.n_rot, p.neox, cos_sin);
}

// Threads of a rope block: a warp multiple covering the row's pairs, at most kRopeMaxThreads.
inline int rope_threads(int64_t pairs) {
  const int64_t warps = (pairs + kWarp - 1) / kWarp;
  return static_cast<int>(warps * kWarp < kRopeMaxThreads ? warps * kWarp : kRopeMaxThreads);
}

}  // namespace

// launch_rope's argument checks; returns the number of heads per row.
inline int64_t check_rope_args(const F32Mat& x, int head_dim, const int32_t* pos, const RopeParams& p,
                               const char* op) {
  launch_check::f32_mat(x, op, "x");
  launch_check::grid_rows(x.rows, op);
  if (head_dim <= 0 || x.cols % head_dim != 0)
    fail(ErrorKind::InvalidArgument, "cuda {}: row of {} is not a whole number of heads of {}", op, x.cols, head_dim);
  if (p.n_rot < 0 || p.n_rot > head_dim || p.n_rot % 2 != 0)
    fail(ErrorKind::InvalidArgument, "cuda {}: n_rot {} must be even and within head_dim {}", op, p.n_rot, head_dim);
  if (!(p.freq_base > 0.0f)) fail(ErrorKind::InvalidArgument, "cuda {}: freq_base {} must be positive", op, p.freq_base);
  if (x.rows > 0 && pos == nullptr) fail(ErrorKind::InvalidArgument, "cuda {}: positions missing", op);
  const int64_t n_heads = x.cols / head_dim;
  if (n_heads * (p.n_rot / 2) > INT_MAX)
    fail(ErrorKind::InvalidArgument, "cuda {}: {} pairs per row exceed int", op, n_heads * (p.n_rot / 2));
  return n_heads;
}

// ops::rope on the device: row t of x (n_heads * head_dim) rotated for position pos[t]
// (a device array of x.rows positions, negative allowed); dims n_rot.. of each head pass through.
inline void launch_rope(F32Mat x, int head_dim, const int32_t* pos, const RopeParams& p, Stream s) {
  const int64_t n_heads = check_rope_args(x, head_dim, pos, p, "rope");
  const int64_t pairs = n_heads * (p.n_rot / 2);
  if (x.rows == 0 || pairs == 0) return;
  EMBER_LAUNCH(rope_kernel, static_cast<unsigned>(x.rows), rope_threads(pairs),
               static_cast<size_t>(p.n_rot) * sizeof(float), s, x.data, x.stride, static_cast<int>(n_heads), head_dim,
               pos, p);
}

}  // namespace ember::cuda
