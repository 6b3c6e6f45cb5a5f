// The packed AVX-512 VNNI kernel shared by Q4_K and Q5_K: the groups of packed_q45_k_avx2.h
// (its layout constants are used from there), two groups per 512-bit register.
// Included by matmul_packed_q4_k_avx512.cpp, matmul_packed_q5_k_avx512.cpp and
// matmul_packed_q45_k_amx.cpp only, after avx512_intrinsics.h.
//
// Per sub-block g and row, dpbusd of the codes (unsigned) by the activations broadcast
// (signed) sums the products in int32: S_g = sum u * a (at most 32 * 31 * 127 for Q5_K), with
// no int16 stage to bound, so all 8 loads of a sub-block go into one accumulator. The scale
// then multiplies in int32 (mullo by sc_g, 6 bits, from a shift and a mask of the row's
// unpacked scale bytes): isum = sum_g sc_g * S_g < 8 * 63 * 125984 < 2^26. The mins term
// sum_g m_g * (bsum_2g + bsum_2g+1) is the AVX2 kernel's (int16 pairs), with dpwssd for its
// madd + add. Both integer sums are exact and the f32 steps
//   y_r += d_r * da * isum_r - dmin_r * da * M_r
// are the AVX2 kernel's, in its order: both kernels give bitwise the same outputs (and one
// token the same as a batch).
#pragma once
#include "backend/cpu/packed_q45_k_avx2.h"
#include "backend/cpu/packed_tiles_avx512.h"

namespace ember::cpu::EMBER_AVX512_NS {
namespace {  // NOLINT(google-build-namespaces): each kernel file gets its own copy

namespace q45x16 {

// The 16 rows' 6-bit scales and mins of one super-block: as q45::RowScales, lane r holding
// row r's scale bytes 0-3 (sc03), 4-7 (sc47) and mins likewise (m03, m47).
struct RowScales16 {
  __m512i sc03, sc47, m03, m47;
  RowScales16(const uint8_t* lo_words, const uint8_t* hi_words) {
    const __m512i a = simd512::load_pair(lo_words, hi_words);
    const __m512i b = simd512::load_pair(lo_words + 32, hi_words + 32);
    const __m512i c = simd512::load_pair(lo_words + 64, hi_words + 64);
    const __m512i low6 = _mm512_set1_epi8(0x3f), low4 = _mm512_set1_epi8(0x0f), top2 = _mm512_set1_epi8(0x30);
    sc03 = _mm512_and_si512(a, low6);
    m03 = _mm512_and_si512(b, low6);
    sc47 = _mm512_or_si512(_mm512_and_si512(c, low4), _mm512_and_si512(_mm512_srli_epi32(a, 2), top2));
    m47 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(c, 4), low4),
                          _mm512_and_si512(_mm512_srli_epi32(b, 2), top2));
  }
  // Sub-block g's scale of row r as the int32 of lane r.
  __m512i scale(int g) const {
    return _mm512_and_si512(_mm512_srli_epi32(g < 4 ? sc03 : sc47, 8 * (g % 4)), _mm512_set1_epi32(0xFF));
  }
  // (m_2t, m_2t+1) of row r as the int16 pair of lane r (q45's in-lane shuffle, per 128 bits).
  __m512i min_pair(int t) const {
    const __m128i control = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q45::kShuf.min_pair[t % 2]));
    return _mm512_shuffle_epi8(t < 2 ? m03 : m47, _mm512_broadcast_i32x4(control));
  }
};

// sum_g m_{r,g} * (bsum_2g + bsum_2g+1) of one token, in lane r; mins[t] from min_pair(t).
inline __m512i mins_dot(const __m512i mins[4], const int16_t* bsums) {
  const __m128i pairs = _mm_hadd_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bsums)),
                                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(bsums + 8)));
  __m512i m = _mm512_dpwssd_epi32(_mm512_setzero_si512(), mins[0], _mm512_broadcastd_epi32(pairs));
  m = _mm512_dpwssd_epi32(m, mins[1], _mm512_broadcastd_epi32(_mm_srli_si128(pairs, 4)));
  m = _mm512_dpwssd_epi32(m, mins[2], _mm512_broadcastd_epi32(_mm_srli_si128(pairs, 8)));
  return _mm512_dpwssd_epi32(m, mins[3], _mm512_broadcastd_epi32(_mm_srli_si128(pairs, 12)));
}

// Q4_K's codes (matmul_packed_q4_k_avx2.cpp: load 8j+q of a super-block's codes, dword r
// holds 4 bytes of row r, low nibbles sub-block 2j, high nibbles 2j+1).
struct Q4KCodes16 {
  using Block = block_q4_K;
  static constexpr size_t kBytes = 32 * 32;

  static void unpack(const uint8_t* lo_codes, const uint8_t* hi_codes, int sp, int q, __m512i& lo, __m512i& hi) {
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    const size_t at = 256 * sp + 32 * q;
    const __m512i raw = simd512::load_pair(lo_codes + at, hi_codes + at);
    lo = _mm512_and_si512(raw, nibble);
    hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble);
  }
};

// Q5_K's codes (matmul_packed_q5_k_avx2.cpp: Q4_K's low four bits, then the fifth bits
// regrouped so that load 2j + q/4 holds, in byte 4r+k of row r, bits 2(q%4) and 2(q%4)+1:
// the fifth bits of element 4q+k of sub-blocks 2j and 2j+1).
struct Q5KCodes16 {
  using Block = block_q5_K;
  static constexpr size_t kLowBytes = 32 * 32;
  static constexpr size_t kBytes = kLowBytes + 8 * 32;

  // Shifts 16-bit lanes left by n (right when negative): bit 4 of each byte then comes from
  // bit 4-n of the same byte for -3 <= n <= 4 (bits crossing bytes land elsewhere).
  static __m512i shift16(__m512i v, int n) { return n >= 0 ? _mm512_slli_epi16(v, n) : _mm512_srli_epi16(v, -n); }

  static void unpack(const uint8_t* lo_codes, const uint8_t* hi_codes, int sp, int q, __m512i& lo, __m512i& hi) {
    const __m512i nibble = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
    const size_t low_at = 256 * sp + 32 * q, high_at = kLowBytes + 32 * (2 * sp + q / 4);
    const __m512i raw = simd512::load_pair(lo_codes + low_at, hi_codes + low_at);
    const __m512i high = simd512::load_pair(lo_codes + high_at, hi_codes + high_at);
    const int s = 2 * (q % 4);
    lo = _mm512_or_si512(_mm512_and_si512(raw, nibble), _mm512_and_si512(shift16(high, 4 - s), bit4));
    hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble),
                         _mm512_and_si512(shift16(high, 3 - s), bit4));
  }
};

// A format's codes, as a policy class (Q4KCodes16, Q5KCodes16):
//   using Block = block_q4_K / block_q5_K;
//   static constexpr size_t kBytes;  // code bytes per super-block and group (as the AVX2 kernel's)
//   // The codes of load q (0..7: elements 4q..4q+3) of sub-blocks 2 * sp and 2 * sp + 1, of
//   // the groups whose codes start at lo_codes (lanes 0-7) and hi_codes (lanes 8-15).
//   static void unpack(const uint8_t* lo_codes, const uint8_t* hi_codes, int sp, int q, __m512i& lo, __m512i& hi);
template <class Codes>
struct Kernel {
  static constexpr size_t kSuperBytes = q45::kHeadBytes + Codes::kBytes;
  static_assert(kSuperBytes == kGroupRows * sizeof(typename Codes::Block), "the AVX2 kernel's groups");

  // Groups g and g + step (step 0: g alone) for tokens c .. c+RN-1; r_end: the range's last
  // row + 1.
  template <int RN>
  static void micro(const MatmulArgs& p, int64_t g, int64_t step, int64_t r_end, int64_t c) {
    const uint8_t* lo_group = p.w + g * p.w_stride;
    const uint8_t* hi_group = lo_group + step * p.w_stride;
    const block_q8_K* a[RN];
    for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const block_q8_K*>(p.a + (c + j) * p.a_stride);
    __m512 acc[RN];
    for (int j = 0; j < RN; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < p.k / QK_K; ++b) {
      const uint8_t* lo_sb = lo_group + b * kSuperBytes;
      const uint8_t* hi_sb = hi_group + b * kSuperBytes;
      const RowScales16 scales(lo_sb + q45::kScaleOff, hi_sb + q45::kScaleOff);
      __m512i isum[RN];
      for (int j = 0; j < RN; ++j) isum[j] = _mm512_setzero_si512();
      // sp: a pair of sub-blocks, sharing its code bytes (each load feeds both).
      for (int sp = 0; sp < 4; ++sp) {
        if constexpr (RN == 1) {  // decode: a quarter super-block at a time, as the AVX2 kernel
          prefetch_ahead(lo_sb + sp * (kSuperBytes / 4), kSuperBytes / 4);
          prefetch_ahead(hi_sb + sp * (kSuperBytes / 4), kSuperBytes / 4);
        }
        __m512i dot_lo[RN], dot_hi[RN];
        for (int j = 0; j < RN; ++j) dot_lo[j] = dot_hi[j] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int q = 0; q < 8; ++q) {
          __m512i ulo, uhi;
          Codes::unpack(lo_sb + q45::kHeadBytes, hi_sb + q45::kHeadBytes, sp, q, ulo, uhi);
          for (int j = 0; j < RN; ++j) {
            const int8_t* act = a[j][b].qs + 64 * sp + 4 * q;
            dot_lo[j] = _mm512_dpbusd_epi32(dot_lo[j], ulo, simd512::broadcast4(act));
            dot_hi[j] = _mm512_dpbusd_epi32(dot_hi[j], uhi, simd512::broadcast4(act + 32));
          }
        }
        const __m512i sc_lo = scales.scale(2 * sp), sc_hi = scales.scale(2 * sp + 1);
        for (int j = 0; j < RN; ++j)
          isum[j] = _mm512_add_epi32(
              isum[j], _mm512_add_epi32(_mm512_mullo_epi32(dot_lo[j], sc_lo), _mm512_mullo_epi32(dot_hi[j], sc_hi)));
      }
      const __m512 d = simd512::fp16_pair(lo_sb + q45::kHalfOff, hi_sb + q45::kHalfOff);
      const __m512 dmin = simd512::fp16_pair(lo_sb + q45::kMinHalfOff, hi_sb + q45::kMinHalfOff);
      const __m512i mins[4] = {scales.min_pair(0), scales.min_pair(1), scales.min_pair(2), scales.min_pair(3)};
      for (int j = 0; j < RN; ++j) {
        const __m512 da = _mm512_set1_ps(a[j][b].d);
        const __m512 m = simd512::to_f32(mins_dot(mins, a[j][b].bsums));
        acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(d, da), simd512::to_f32(isum[j]), acc[j]);
        acc[j] = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, da), m, acc[j]);
      }
    }
    for (int j = 0; j < RN; ++j) store_group_pair(p.y + (c + j) * p.y_stride, acc[j], g, step, r_end);
  }

  static void tile(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    constexpr int RN = 4;
    for_each_group_pair_tile<RN>(
        r0, r1, c0, c1, [&](int64_t g, int64_t step, int64_t c) { micro<RN>(p, g, step, r1, c); },
        [&](int64_t g, int64_t step, int64_t c) { micro<1>(p, g, step, r1, c); });
  }
};

}  // namespace q45x16

}  // namespace
}  // namespace ember::cpu::EMBER_AVX512_NS
