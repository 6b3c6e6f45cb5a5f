// Packed Q4_0, Q5_0, Q4_1 and Q5_1 with AVX-512 VNNI (see matmul_packed_avx512.h and
// avx512_intrinsics.h).
//
// Reads the groups of matmul_packed_q32_avx2.cpp (layout: packed_q32_layout.h), two groups
// per 512-bit load. dpbusd of a load's codes (unsigned, up to 31) by the 4 activations
// broadcast (signed) adds each row's 4 products to its int32 lane: one instruction for the
// AVX2 kernel's maddubs, int16 adds and madd. The int32 dot S_r is exact either way, and the
// f32 steps
//   Q4_0, Q5_0:  y_r += d_r * (da * S_r - B * s)   (B = 8, 16)
//   Q4_1, Q5_1:  y_r += (d_r * da) * S_r;  y_r += m_r * s
// are the AVX2 kernel's, in its order, so both give bitwise the same outputs (and one token
// the same as a batch).
#include "backend/cpu/avx512_intrinsics.h"
#include "backend/cpu/matmul_packed_avx512.h"
#include "backend/cpu/packed_q32_layout.h"
#include "backend/cpu/packed_tiles_avx512.h"

namespace ember::cpu::EMBER_AVX512_NS {

namespace {

using packed32::kCodeLoads;

// Groups g and g + step (step 0: g alone) for tokens c .. c+RN-1; r_end: the range's last
// row + 1.
template <class F, int RN>
void micro(const MatmulArgs& p, int64_t g, int64_t step, int64_t r_end, int64_t c) {
  const uint8_t* lo_group = p.w + g * p.w_stride;
  const uint8_t* hi_group = lo_group + step * p.w_stride;
  const block_q8s* a[RN];
  for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const block_q8s*>(p.a + (c + j) * p.a_stride);
  __m512 acc[RN];
  for (int j = 0; j < RN; ++j) acc[j] = _mm512_setzero_ps();
  const __m512i nibble = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
  for (int64_t b = 0; b < p.k / 32; ++b) {
    const uint8_t* lo_blk = lo_group + b * F::kBlockBytes;
    const uint8_t* hi_blk = hi_group + b * F::kBlockBytes;
    if constexpr (RN == 1) {  // decode: see prefetch_ahead (hi is lo again without a pair)
      prefetch_ahead(lo_blk, F::kBlockBytes);
      prefetch_ahead(hi_blk, F::kBlockBytes);
    }
    __m512i plane = _mm512_setzero_si512();
    if constexpr (F::kFifthBit) plane = simd512::load_pair(lo_blk + F::kPlane, hi_blk + F::kPlane);
    __m512i lo[kCodeLoads], hi[kCodeLoads];
    for (int q = 0; q < kCodeLoads; ++q) {
      const __m512i raw = simd512::load_pair(lo_blk + F::kCodes + 32 * q, hi_blk + F::kCodes + 32 * q);
      lo[q] = _mm512_and_si512(raw, nibble);
      hi[q] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble);
      if constexpr (F::kFifthBit) {  // bit q and bit 4+q of each plane byte, to bit 4
        lo[q] = _mm512_or_si512(lo[q], _mm512_and_si512(_mm512_slli_epi16(plane, 4 - q), bit4));
        hi[q] = _mm512_or_si512(hi[q], _mm512_and_si512(_mm512_srli_epi16(plane, q), bit4));
      }
    }
    const __m512 d = simd512::fp16_pair(lo_blk + F::kScales, hi_blk + F::kScales);
    __m512 m = _mm512_setzero_ps();
    if constexpr (F::kOffset) m = simd512::fp16_pair(lo_blk + F::kOffsets, hi_blk + F::kOffsets);
    for (int j = 0; j < RN; ++j) {
      const block_q8s& ab = a[j][b];
      // Two dependency chains per token (low and high nibbles), summed once: integer sums,
      // so the order does not change S_r.
      __m512i s_lo = _mm512_setzero_si512(), s_hi = _mm512_setzero_si512();
      for (int q = 0; q < kCodeLoads; ++q) {
        s_lo = _mm512_dpbusd_epi32(s_lo, lo[q], simd512::broadcast4(ab.qs + 4 * q));
        s_hi = _mm512_dpbusd_epi32(s_hi, hi[q], simd512::broadcast4(ab.qs + 16 + 4 * q));
      }
      const __m512 dot = simd512::to_f32(_mm512_add_epi32(s_lo, s_hi));
      if constexpr (F::kOffset) {
        acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(ab.d)), dot, acc[j]);
        acc[j] = _mm512_fmadd_ps(m, _mm512_set1_ps(ab.s), acc[j]);
      } else {
        constexpr float kBias = F::kBias;
        const __m512 t = _mm512_fmsub_ps(_mm512_set1_ps(ab.d), dot, _mm512_set1_ps(kBias * ab.s));
        acc[j] = _mm512_fmadd_ps(d, t, acc[j]);
      }
    }
  }
  for (int j = 0; j < RN; ++j) store_group_pair(p.y + (c + j) * p.y_stride, acc[j], g, step, r_end);
}

// 8-token tiles unpack a block's codes once for twice the tokens of 4 (the 32 registers
// hold it): Q4_0 pp16, 16 tokens through the model, alternated: 135-148 -> 151-170 t/s;
// pp512 alike. 4-token tiles and single tokens take the rest of a batch.
template <class F>
void tile(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  for_each_group_pair_tiles<8, 4>(
      r0, r1, c0, c1, [&](int64_t g, int64_t step, int64_t c) { micro<F, 8>(p, g, step, r1, c); },
      [&](int64_t g, int64_t step, int64_t c) { micro<F, 4>(p, g, step, r1, c); },
      [&](int64_t g, int64_t step, int64_t c) { micro<F, 1>(p, g, step, r1, c); });
}

}  // namespace

void tile_q4_0(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  tile<packed32::Q4_0>(p, r0, r1, c0, c1);
}
void tile_q5_0(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  tile<packed32::Q5_0>(p, r0, r1, c0, c1);
}
void tile_q4_1(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  tile<packed32::Q4_1>(p, r0, r1, c0, c1);
}
void tile_q5_1(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  tile<packed32::Q5_1>(p, r0, r1, c0, c1);
}

}  // namespace ember::cpu::EMBER_AVX512_NS
