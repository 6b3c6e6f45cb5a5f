// RMS normalisation on the device (the CUDA side of ops::rms_norm in backend/ops.h):
//   y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * (w == null ? 1 : one_plus_w ? 1 + w : w)
// x and y are rows x dim row-major f32 device arrays (y may equal x); w is dim floats or null.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ember::cuda {

// Enqueues the kernel on `stream` (asynchronous); throws Error for bad sizes or launch errors.
void launch_rms_norm_f32(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps,
                         bool one_plus_w, cudaStream_t stream);

}  // namespace ember::cuda
