// AVX2 math helpers for the *_avx2.cpp kernels only (they need -mavx2 -mfma): exp, sigmoid
// and horizontal reductions. exp is a Cephes-style range reduction (x = n ln2 + r) with a
// degree-6 polynomial for e^r, within ~2 ulp of expf over the range where f32 is normal;
// inputs below -87.3 (and -inf) give 0, above 88.37 are clamped.
#pragma once
#if !defined(__AVX2__) || !defined(__FMA__)
#error "simd_math_avx2.h is for translation units compiled with -mavx2 -mfma"
#endif
#include <immintrin.h>

namespace ember::simd {

inline __m256 exp256(__m256 x) {
  const __m256 max_x = _mm256_set1_ps(88.3762626647949f);
  const __m256 min_x = _mm256_set1_ps(-87.3365478515625f);
  const __m256 underflow = _mm256_cmp_ps(x, min_x, _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, min_x), max_x);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // r = x - n ln2, with ln2 split in a high part exact in f32 and a low correction
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 r2 = _mm256_mul_ps(r, r);
  __m256 y = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // y * 2^n: n + 127 into the exponent field (n in [-126, 128) after the clamps)
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(underflow, y);
}

// 1 / (1 + e^-x), exact at the extremes (0 and 1).
inline __m256 sigmoid256(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp256(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// _mm256_hadd_ps(x, y) as two shuffles and an add: the same sums (x0 + x1, ...) in the same
// lanes, so the same bits; faster than vhaddps in the attention kernels on Zen 3.
inline __m256 pair_sums(__m256 x, __m256 y) {
  return _mm256_add_ps(_mm256_shuffle_ps(x, y, 0x88), _mm256_shuffle_ps(x, y, 0xDD));
}

// The four horizontal sums of a, b, c, d as one vector {sum a, sum b, sum c, sum d}, each by
// the tree ((x0+x1)+(x2+x3)) + ((x4+x5)+(x6+x7)).
inline __m128 hsum4(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 ab = pair_sums(a, b);  // a01 a23 b01 b23 | a45 a67 b45 b67
  const __m256 cd = pair_sums(c, d);
  const __m256 abcd = pair_sums(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

// Mask for the first n (0..8) lanes, for loads/stores of row tails.
inline __m256i tail_mask(int n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}

}  // namespace ember::simd
