// AVX2 row kernel of rms_norm (see norm.cpp for the op and its reference).
#include <cmath>

#include "backend/cpu/row_kernels.h"
#include "backend/cpu/simd_math_avx2.h"

namespace ember::ops::avx2 {

void rms_norm_row(const float* x, const float* w, float eps, bool one_plus_w, int64_t n, float* y) {
  // Four independent accumulators hide the FMA latency; the tail uses a masked load.
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) {
      __m256 v = _mm256_loadu_ps(x + i + 8 * k);
      acc[k] = _mm256_fmadd_ps(v, v, acc[k]);
    }
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    acc[0] = _mm256_fmadd_ps(v, v, acc[0]);
  }
  if (i < n) {
    __m256 v = _mm256_maskload_ps(x + i, simd::tail_mask(static_cast<int>(n - i)));
    acc[1] = _mm256_fmadd_ps(v, v, acc[1]);
  }
  const float sum_sq = simd::hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  const __m256 inv_rms = _mm256_set1_ps(1.0f / std::sqrt(sum_sq / static_cast<float>(n) + eps));
  const __m256 one = _mm256_set1_ps(1.0f);
  // The per-element gain w, 1 + w or 1; `mask` limits the load to a row tail.
  auto gain = [&](int64_t at, const __m256i* mask) {
    if (w == nullptr) return one;
    __m256 g = mask ? _mm256_maskload_ps(w + at, *mask) : _mm256_loadu_ps(w + at);
    return one_plus_w ? _mm256_add_ps(g, one) : g;
  };
  i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), inv_rms);
    _mm256_storeu_ps(y + i, _mm256_mul_ps(v, gain(i, nullptr)));
  }
  if (i < n) {
    const __m256i m = simd::tail_mask(static_cast<int>(n - i));
    __m256 v = _mm256_mul_ps(_mm256_maskload_ps(x + i, m), inv_rms);
    _mm256_maskstore_ps(y + i, m, _mm256_mul_ps(v, gain(i, &m)));
  }
}

}  // namespace ember::ops::avx2
