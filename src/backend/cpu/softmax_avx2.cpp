// AVX2 row kernel of softmax (see softmax.cpp for the op and its reference).
#include <cmath>
#include <limits>

#include "backend/cpu/row_kernels.h"
#include "backend/cpu/simd_math_avx2.h"

namespace ember::ops::avx2 {

void softmax_row(float* x, int64_t n) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  __m256 vmax = _mm256_set1_ps(neg_inf);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + i));
  float max = simd::hmax(vmax);
  for (; i < n; ++i) max = std::fmax(max, x[i]);
  if (max == neg_inf) {
    for (i = 0; i < n; ++i) x[i] = 0.0f;
    return;
  }
  // Pass 1 stores e^(x - max) and sums it; pass 2 scales by 1/sum.
  const __m256 m = _mm256_set1_ps(max);
  __m256 vsum = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    __m256 e = simd::exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
    _mm256_storeu_ps(x + i, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  if (i < n) {
    const __m256i mask = simd::tail_mask(static_cast<int>(n - i));
    __m256 e = simd::exp256(_mm256_sub_ps(_mm256_maskload_ps(x + i, mask), m));
    e = _mm256_and_ps(e, _mm256_castsi256_ps(mask));
    _mm256_maskstore_ps(x + i, mask, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / simd::hsum(vsum));
  for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), inv));
  if (i < n) {
    const __m256i mask = simd::tail_mask(static_cast<int>(n - i));
    _mm256_maskstore_ps(x + i, mask, _mm256_mul_ps(_mm256_maskload_ps(x + i, mask), inv));
  }
}

}  // namespace ember::ops::avx2
