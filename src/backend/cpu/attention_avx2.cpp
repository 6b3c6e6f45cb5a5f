// AVX2 tile kernels of the tiled attention (attention.cpp): K/V decoding with F16C and
// integer widening, a 2-row x 4-key register-blocked dot product for the scores, a 2-row x
// 32-column blocked P.V accumulation, and vector exp / tanh for the softmax and soft-cap.
#include <cstring>

#include "backend/cpu/attention_kernels.h"
#include "backend/cpu/simd_math_avx2.h"
#include "tensor/fp16.h"

namespace ember::attn {
namespace {

void to_f32(DType type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::F16: {
      const uint16_t* h = static_cast<const uint16_t*>(src);
      int64_t i = 0;
      for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
      for (; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
      return;
    }
    case DType::Q8_0: {
      const block_q8_0* b = static_cast<const block_q8_0*>(src);
      for (int64_t blk = 0; blk < n / QK8_0; ++blk, dst += QK8_0) {
        const __m256 d = _mm256_set1_ps(fp16_to_f32(b[blk].d));
        for (int k = 0; k < 4; ++k) {
          const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b[blk].qs + 8 * k));
          _mm256_storeu_ps(dst + 8 * k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8))));
        }
      }
      return;
    }
    case DType::Q4_0: {
      const block_q4_0* b = static_cast<const block_q4_0*>(src);
      const __m128i low4 = _mm_set1_epi8(0x0F);
      const __m256i eight = _mm256_set1_epi32(8);
      for (int64_t blk = 0; blk < n / QK4_0; ++blk, dst += QK4_0) {
        const __m256 d = _mm256_set1_ps(fp16_to_f32(b[blk].d));
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[blk].qs));
        const __m128i lo = _mm_and_si128(packed, low4);                     // elements 0..15
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), low4);  // elements 16..31
        const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
        for (int k = 0; k < 4; ++k) {
          const __m256i q = _mm256_sub_epi32(_mm256_cvtepu8_epi32(parts[k]), eight);
          _mm256_storeu_ps(dst + 8 * k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(q)));
        }
      }
      return;
    }
    default:
      return;  // check_args admits only the four cache types
  }
}

// R query rows x C keys of scores, with R*C vector accumulators over the first d8 elements.
template <int R, int C>
inline void score_block(const float* q, int d, const float* const* k, int d8, float* s, int s_stride) {
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  for (int x = 0; x < d8; x += 8) {
    __m256 kv[C];
    for (int c = 0; c < C; ++c) kv[c] = _mm256_loadu_ps(k[c] + x);
    for (int r = 0; r < R; ++r) {
      const __m256 qv = _mm256_loadu_ps(q + r * d + x);
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(qv, kv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r) {
    if constexpr (C == 4) {
      _mm_storeu_ps(s + r * s_stride, simd::hsum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
    } else {
      for (int c = 0; c < C; ++c) s[r * s_stride + c] = simd::hsum(acc[r][c]);
    }
    for (int c = 0; c < C; ++c)
      for (int x = d8; x < d; ++x) s[r * s_stride + c] += q[r * d + x] * k[c][x];
  }
}

template <int R>
inline void score_rows(const float* q, const float* const* k, int nk, int d, float* s, int s_stride) {
  const int d8 = d / 8 * 8;
  int j = 0;
  for (; j + 4 <= nk; j += 4) score_block<R, 4>(q, d, k + j, d8, s + j, s_stride);
  for (; j < nk; ++j) score_block<R, 1>(q, d, k + j, d8, s + j, s_stride);
}

void scores(const float* q, int m, const float* const* k, int nk, int d, float* s, int s_stride) {
  int i = 0;
  for (; i + 2 <= m; i += 2) score_rows<2>(q + i * d, k, nk, d, s + i * s_stride, s_stride);
  if (i < m) score_rows<1>(q + i * d, k, nk, d, s + i * s_stride, s_stride);
}

// acc[R rows][W vectors at column x] += sum_j p[r][j] * v[j][x ..]
template <int R, int W>
inline void accumulate_block(const float* p, int p_stride, const float* const* v, int nv, int d, int x,
                             float* acc) {
  __m256 a[R][W];
  for (int r = 0; r < R; ++r)
    for (int w = 0; w < W; ++w) a[r][w] = _mm256_loadu_ps(acc + r * d + x + 8 * w);
  for (int j = 0; j < nv; ++j) {
    __m256 vv[W];
    for (int w = 0; w < W; ++w) vv[w] = _mm256_loadu_ps(v[j] + x + 8 * w);
    for (int r = 0; r < R; ++r) {
      const __m256 pj = _mm256_set1_ps(p[r * p_stride + j]);
      for (int w = 0; w < W; ++w) a[r][w] = _mm256_fmadd_ps(pj, vv[w], a[r][w]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int w = 0; w < W; ++w) _mm256_storeu_ps(acc + r * d + x + 8 * w, a[r][w]);
}

template <int R>
inline void accumulate_rows(const float* p, int p_stride, const float* const* v, int nv, int d, float* acc) {
  int x = 0;
  for (; x + 32 <= d; x += 32) accumulate_block<R, 4>(p, p_stride, v, nv, d, x, acc);
  for (; x + 8 <= d; x += 8) accumulate_block<R, 1>(p, p_stride, v, nv, d, x, acc);
  for (; x < d; ++x)
    for (int r = 0; r < R; ++r) {
      float sum = 0.0f;
      for (int j = 0; j < nv; ++j) sum += p[r * p_stride + j] * v[j][x];
      acc[r * d + x] += sum;
    }
}

void accumulate(const float* p, int p_stride, int m, const float* const* v, int nv, int d, float* acc) {
  int i = 0;
  for (; i + 2 <= m; i += 2) accumulate_rows<2>(p + i * p_stride, p_stride, v, nv, d, acc + i * d);
  if (i < m) accumulate_rows<1>(p + i * p_stride, p_stride, v, nv, d, acc + i * d);
}

float exp_sum(float* x, int n, float max) {
  const __m256 m = _mm256_set1_ps(max);
  __m256 sum = _mm256_setzero_ps();
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = simd::exp256(_mm256_sub_ps(_mm256_loadu_ps(x + j), m));
    _mm256_storeu_ps(x + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (j < n) {
    const __m256i mask = simd::tail_mask(n - j);
    const __m256 e = _mm256_and_ps(simd::exp256(_mm256_sub_ps(_mm256_maskload_ps(x + j, mask), m)),
                                   _mm256_castsi256_ps(mask));
    _mm256_maskstore_ps(x + j, mask, e);
    sum = _mm256_add_ps(sum, e);
  }
  return simd::hsum(sum);
}

// cap * tanh(x / cap), with tanh(y) = 1 - 2 / (e^(2y) + 1) (exact limits +-1).
void softcap(float* x, int n, float cap) {
  const __m256 c = _mm256_set1_ps(cap), two_over_c = _mm256_set1_ps(2.0f / cap);
  const __m256 one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
  auto f = [&](__m256 v) {
    const __m256 e = simd::exp256(_mm256_mul_ps(v, two_over_c));
    return _mm256_mul_ps(c, _mm256_sub_ps(one, _mm256_div_ps(two, _mm256_add_ps(e, one))));
  };
  int j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(x + j, f(_mm256_loadu_ps(x + j)));
  if (j < n) {
    const __m256i mask = simd::tail_mask(n - j);
    _mm256_maskstore_ps(x + j, mask, f(_mm256_maskload_ps(x + j, mask)));
  }
}

}  // namespace

const Kernels& avx2_kernels() {
  static const Kernels k{to_f32, scores, accumulate, exp_sum, softcap};
  return k;
}

}  // namespace ember::attn
