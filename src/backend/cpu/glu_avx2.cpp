// AVX2 row kernels of swiglu and geglu (see glu.cpp for the ops and their references).
// GELU-tanh uses the identity 0.5 x (1 + tanh(u)) = x * sigmoid(2u), one exp per element.
#include "backend/cpu/ops_reference.h"
#include "backend/cpu/row_kernels.h"
#include "backend/cpu/simd_math_avx2.h"

namespace ember::ops::avx2 {
namespace {

struct Silu {
  static __m256 vec(__m256 x) { return _mm256_mul_ps(x, simd::sigmoid256(x)); }
  static float one(float x) { return reference::silu(x); }
};

struct GeluTanh {
  static __m256 vec(__m256 x) {
    const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
    // 2u = 2 sqrt(2/pi) (x + 0.044715 x^3)
    const __m256 two_u = _mm256_mul_ps(_mm256_set1_ps(1.5957691216057308f),
                                       _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x3, x));
    return _mm256_mul_ps(x, simd::sigmoid256(two_u));
  }
  static float one(float x) { return reference::gelu_tanh(x); }
};

template <class Act>
void gated_row(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_mul_ps(Act::vec(_mm256_loadu_ps(gate + i)), _mm256_loadu_ps(up + i)));
  for (; i < n; ++i) out[i] = Act::one(gate[i]) * up[i];
}

}  // namespace

// ggml's swiglu_oai per element: x = min(gate, limit), y = clamp(up, -limit, limit),
// x * sigmoid(alpha x) * (y + 1). min/max order as std::min/std::clamp: a NaN gate stays NaN
// (maxps/minps return their second operand when either is NaN).
void swiglu_oai_row(const float* gate, const float* up, int64_t n, float alpha, float limit, float* out) {
  const __m256 lim = _mm256_set1_ps(limit), neg_lim = _mm256_set1_ps(-limit), a = _mm256_set1_ps(alpha);
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_min_ps(lim, _mm256_loadu_ps(gate + i));
    const __m256 y = _mm256_min_ps(lim, _mm256_max_ps(neg_lim, _mm256_loadu_ps(up + i)));
    const __m256 act = _mm256_mul_ps(x, simd::sigmoid256(_mm256_mul_ps(a, x)));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(act, _mm256_add_ps(y, one)));
  }
  for (; i < n; ++i) out[i] = reference::swiglu_oai(gate[i], up[i], alpha, limit);
}

void swiglu_row(const float* gate, const float* up, int64_t n, float* out) { gated_row<Silu>(gate, up, n, out); }
void geglu_row(const float* gate, const float* up, int64_t n, float* out) { gated_row<GeluTanh>(gate, up, n, out); }

}  // namespace ember::ops::avx2
