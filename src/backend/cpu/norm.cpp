// RMS normalisation (llama, qwen) and its (1 + w) variant (gemma stores w - 1).
#include <cmath>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/op_checks.h"
#include "backend/cpu/ops_reference.h"
#include "backend/cpu/row_kernels.h"
#include "util/thread_pool.h"

namespace ember::ops {
namespace {

using RmsRowFn = void (*)(const float*, const float*, float, bool, int64_t, float*);

// torch: y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (w or 1 + w)
// Reads the whole row before writing, so y may alias x.
void rms_norm_row_reference(const float* x, const float* w, float eps, bool one_plus_w, int64_t n, float* y) {
  double sum_sq = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
  const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps);
  for (int64_t i = 0; i < n; ++i) {
    double g = w == nullptr ? 1.0 : one_plus_w ? 1.0 + w[i] : w[i];
    y[i] = static_cast<float>(x[i] * inv_rms * g);
  }
}

void check_args(const MatView& x, const F32Mat& y, const char* op) {
  detail::require_f32(x, op, "x");
  detail::require_valid(y, op, "y");
  detail::require_shape(y.rows, y.cols, x.rows, x.cols, op, "y");
}

}  // namespace

namespace reference {
void rms_norm(const MatView& x, const float* w, float eps, bool one_plus_w, F32Mat y) {
  check_args(x, y, "rms_norm");
  for (int64_t r = 0; r < x.rows; ++r) rms_norm_row_reference(detail::f32_row(x, r), w, eps, one_plus_w, x.cols, y.row(r));
}
}  // namespace reference

void rms_norm(ThreadPool& pool, const MatView& x, const float* w, float eps, bool one_plus_w, F32Mat y) {
  check_args(x, y, "rms_norm");
  if (x.cols == 0) return;
  const RmsRowFn row_fn = simd_level() >= SimdLevel::AVX2 ? avx2::rms_norm_row : rms_norm_row_reference;
  pool.parallel_for(x.rows, detail::row_grain(x.cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) row_fn(detail::f32_row(x, r), w, eps, one_plus_w, x.cols, y.row(r));
  });
}

}  // namespace ember::ops
