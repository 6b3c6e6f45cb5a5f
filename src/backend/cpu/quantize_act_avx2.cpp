// AVX2 activation quantization (built with AVX2 flags; see quantize_act_avx2.h). Each
// step is the scalar one's operation on 8 lanes, in the same order, so the bytes agree:
// Q8S:  d = amax / 127, q = nearbyint(x * (1/d)) (round half to even), then d rounded to fp16,
//       s = d * sum(q)
// Q8K:  max = the first element of largest |x|, iscale = -127 / max,
//       q = clamp(lround(iscale * x), -127, 127) (round half away from zero), d = 1 / iscale,
//       bsums = sums of 16 q.
#include "backend/cpu/quantize_act_avx2.h"

#include <immintrin.h>
#include "tensor/fp16.h"

#include <cstring>

#include "backend/cpu/simd_math_avx2.h"
#include "tensor/dtype.h"

namespace ember::cpu {

namespace {

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// max(|x|) over n floats (a multiple of 8). max_ps returns its second operand when either
// is NaN, so NaNs are skipped as the scalar `fabs(x) > amax` does.
inline float abs_max(const float* x, int n) {
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8) m = _mm256_max_ps(abs_ps(_mm256_loadu_ps(x + i)), m);
  return simd::hmax(m);
}

inline int hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// 16 int32 codes in [-127, 127] (two registers, in order) to 16 int8 bytes.
inline void store_i8x16(int8_t* dst, __m256i a, __m256i b) {
  const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);  // int16, in order
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst),
                   _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1)));
}

void quantize_q8s(const float* x, block_q8s* out, int64_t k) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32) {
    const float d = abs_max(x, 32) / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    __m256i q[4];
    for (int i = 0; i < 4; ++i)  // the default rounding mode, as nearbyint
      q[i] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), id), _MM_FROUND_CUR_DIRECTION));
    store_i8x16(out[b].qs, q[0], q[1]);
    store_i8x16(out[b].qs + 16, q[2], q[3]);
    const float d16 = fp16_to_f32(f32_to_fp16(d));  // stored as ggml stores it (see quantize_act.cpp)
    out[b].d = d16;
    out[b].s = d16 * static_cast<float>(hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]))));
  }
}

// lround of 8 lanes (|v| < 2^31): truncate, then step away from zero when the dropped
// fraction (exact: v - trunc(v) loses no bits) is at least one half.
inline __m256i round_half_away(__m256 v) {
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 half_or_more = _mm256_cmp_ps(abs_ps(_mm256_sub_ps(v, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 step = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, _mm256_set1_ps(-0.0f)));  // +-1 as v
  return _mm256_cvttps_epi32(_mm256_add_ps(t, _mm256_and_ps(half_or_more, step)));
}

void quantize_q8k(const float* x, block_q8_K* out, int64_t k) {
  for (int64_t b = 0; b < k / QK_K; ++b, x += QK_K) {
    const float amax = abs_max(x, QK_K);
    if (amax == 0.0f) {
      std::memset(&out[b], 0, sizeof out[b]);
      continue;
    }
    // The scalar loop keeps the first element of largest magnitude (its sign matters).
    const __m256 target = _mm256_set1_ps(amax);
    int first = 0;
    for (int i = 0; i < QK_K; i += 8) {
      const int hit = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(_mm256_loadu_ps(x + i)), target, _CMP_EQ_OQ));
      if (hit) {
        first = i + __builtin_ctz(static_cast<unsigned>(hit));
        break;
      }
    }
    const float iscale = -127.0f / x[first];
    const __m256 scale = _mm256_set1_ps(iscale);
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    for (int g = 0; g < QK_K / 16; ++g) {
      __m256i q[2];
      for (int i = 0; i < 2; ++i) {
        const __m256i r = round_half_away(_mm256_mul_ps(scale, _mm256_loadu_ps(x + 16 * g + 8 * i)));
        q[i] = _mm256_min_epi32(_mm256_max_epi32(r, lo), hi);
      }
      store_i8x16(out[b].qs + 16 * g, q[0], q[1]);
      out[b].bsums[g] = static_cast<int16_t>(hsum_epi32(_mm256_add_epi32(q[0], q[1])));
    }
    out[b].d = 1.0f / iscale;
  }
}

}  // namespace

void quantize_act_row_avx2(ActFormat f, const float* x, void* dst, int64_t k) {
  if (f == ActFormat::Q8S)
    quantize_q8s(x, static_cast<block_q8s*>(dst), k);
  else if (f == ActFormat::Q8K)
    quantize_q8k(x, static_cast<block_q8_K*>(dst), k);
}

}  // namespace ember::cpu
