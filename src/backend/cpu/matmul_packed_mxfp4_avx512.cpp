// Packed MXFP4 with AVX-512 VNNI (see matmul_packed_avx512.h and avx512_intrinsics.h).
//
// Reads the groups of matmul_packed_mxfp4_avx2.cpp (nb = k / 32 blocks: first nb x 8 E8M0
// exponents, then per block 4 loads of 32 B whose dword r holds 8 nibble codes of row r),
// two groups per 512-bit load. As in the AVX2 kernel the codes are looked up in the doubled
// e2m1 table (vpshufb per 128-bit lane) and dpbusd takes |w| with the activations negated
// under w's sign mask (AVX-512 has no vpsignb; where w = 0 the product is 0 either way).
// The block's int32 dot S_r is exact either way, and the f32 step
//   y_r += (d_r * da) * S_r,   d_r = 2^(e_r - 128)
// is the AVX2 kernel's, so both give bitwise the same outputs (and one token the same as a
// batch).
#include "backend/cpu/avx512_intrinsics.h"
#include "backend/cpu/matmul_packed_avx512.h"
#include "backend/cpu/mxfp4_scales_avx2.h"
#include "backend/cpu/packed_tiles_avx512.h"

namespace ember::cpu::EMBER_AVX512_NS {

namespace {

constexpr size_t kScaleBytes = kGroupRows;                  // per block: one exponent per row
constexpr size_t kCodeBytes = kGroupRows * QK_MXFP4 / 2;    // per block: 4 loads of 32 B
constexpr int kLoads = QK_MXFP4 / 8;

// The 16 rows' half scales: 8 exponents at lo (rows 0-7), 8 at hi (rows 8-15).
inline __m512 half_scale_pair(const uint8_t* lo, const uint8_t* hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(mxfp4_half_scales(lo)), mxfp4_half_scales(hi), 1);
}

// Adds the products of the looked-up codes w and the activations av to dot.
inline __m512i dot_codes(__m512i dot, __m512i w, __m512i av) {
  const __m512i signed_av = _mm512_mask_sub_epi8(av, _mm512_movepi8_mask(w), _mm512_setzero_si512(), av);
  return _mm512_dpbusd_epi32(dot, _mm512_abs_epi8(w), signed_av);
}

// Groups g and g + step (step 0: g alone) for tokens c .. c+RN-1; r_end: the range's last
// row + 1.
template <int RN>
void micro(const MatmulArgs& p, int64_t g, int64_t step, int64_t r_end, int64_t c) {
  const int64_t nb = p.k / QK_MXFP4;
  const uint8_t* lo_scales = p.w + g * p.w_stride;
  const uint8_t* hi_scales = lo_scales + step * p.w_stride;
  const uint8_t* lo_codes = lo_scales + nb * kScaleBytes;
  const uint8_t* hi_codes = hi_scales + nb * kScaleBytes;
  const block_q8s* a[RN];
  for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const block_q8s*>(p.a + (c + j) * p.a_stride);
  __m512 acc[RN];
  for (int j = 0; j < RN; ++j) acc[j] = _mm512_setzero_ps();
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values)));
  for (int64_t b = 0; b < nb; ++b) {
    if constexpr (RN == 1) {  // decode: see prefetch_ahead; exponents and codes of both groups
      prefetch_ahead(lo_scales + b * kScaleBytes, kScaleBytes);
      prefetch_ahead(hi_scales + b * kScaleBytes, kScaleBytes);
      prefetch_ahead(lo_codes + b * kCodeBytes, kCodeBytes);
      prefetch_ahead(hi_codes + b * kCodeBytes, kCodeBytes);
    }
    // Two dependency chains per token (low and high nibbles), summed once: integer sums.
    __m512i dot[RN][2];
    for (int j = 0; j < RN; ++j) dot[j][0] = dot[j][1] = _mm512_setzero_si512();
    for (int q = 0; q < kLoads; ++q) {
      const __m512i raw = simd512::load_pair(lo_codes + b * kCodeBytes + 32 * q, hi_codes + b * kCodeBytes + 32 * q);
      const __m512i w_lo = _mm512_shuffle_epi8(table, _mm512_and_si512(raw, nibble));
      const __m512i w_hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble));
      for (int j = 0; j < RN; ++j) {
        dot[j][0] = dot_codes(dot[j][0], w_lo, simd512::broadcast4(a[j][b].qs + 4 * q));
        dot[j][1] = dot_codes(dot[j][1], w_hi, simd512::broadcast4(a[j][b].qs + 16 + 4 * q));
      }
    }
    const __m512 d = half_scale_pair(lo_scales + b * kScaleBytes, hi_scales + b * kScaleBytes);
    for (int j = 0; j < RN; ++j) {
      const __m512 s = simd512::to_f32(_mm512_add_epi32(dot[j][0], dot[j][1]));
      acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(a[j][b].d)), s, acc[j]);
    }
  }
  for (int j = 0; j < RN; ++j) store_group_pair(p.y + (c + j) * p.y_stride, acc[j], g, step, r_end);
}

}  // namespace

void tile_mxfp4(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  constexpr int RN = 4;
  for_each_group_pair_tile<RN>(
      r0, r1, c0, c1, [&](int64_t g, int64_t step, int64_t c) { micro<RN>(p, g, step, r1, c); },
      [&](int64_t g, int64_t step, int64_t c) { micro<1>(p, g, step, r1, c); });
}

}  // namespace ember::cpu::EMBER_AVX512_NS
