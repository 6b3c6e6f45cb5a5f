// RMSNorm on packed rows: kernels and launch in cuda/kernels/rms_norm.cuh (shared with the CPU tests).
#include <climits>
#include <vector>

#include "backend/cuda_api.h"
#include "cuda/check.h"
#include "cuda/device_buffer.h"
#include "cuda/kernels/rms_norm.cuh"
#include "cuda/rms_norm.h"
#include "util/error.h"

namespace ember::cuda {

namespace {

void check_sizes(int64_t rows, int64_t dim) {
  if (rows <= 0 || dim <= 0 || rows > INT_MAX)
    fail(ErrorKind::InvalidArgument, "cuda rms_norm: bad shape {} rows x {} (rows 1..{}, dim >= 1)", rows, dim, INT_MAX);
}

}  // namespace

void launch_rms_norm_f32(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps,
                         bool one_plus_w, cudaStream_t stream) {
  check_sizes(rows, dim);
  const MatView xv{DType::F32, dim, rows, static_cast<size_t>(dim) * sizeof(float), x};
  launch_rms_norm(xv, w, eps, one_plus_w, F32Mat{y, dim, rows, dim}, stream);
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
