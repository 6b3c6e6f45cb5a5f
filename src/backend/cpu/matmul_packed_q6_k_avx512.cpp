// Packed Q6_K with AVX-512 VNNI (see matmul_packed_avx512.h and avx512_intrinsics.h).
//
// Reads the groups of matmul_packed_q6_k_avx2.cpp (per super-block of 8 rows: 16 sub-blocks
// of three 32-byte vectors X, Y, Z that give the 6-bit codes u of elements 0..3, 4..7, 8..11
// and, from their top bits, 12..15, with dword r of each vector row r's; then 8 x 16 B of
// int8 scale pairs, row r's (sc_2k, sc_2k+1) at bytes 2r, 2r+1; then the rows' fp16 d), two
// groups per 512-bit register.
//
// dpbusd of a code vector (u in [0, 63], unsigned) by its 4 activations broadcast (signed)
// sums each row's products in int32, so a sub-block's dot S_g = sum u * a (at most
// 16 * 63 * 127) needs no int16 stage; the signed scale multiplies it in int32 (mullo). The
// bias is the AVX2 kernel's: sum_g sc_g * 32 * bsum_g per pair of sub-blocks, by dpwssd of the
// negated scale pairs times 32 with the token's bsum pair. The super-block's integer dot
//   S_r = sum_g sc_g * sum (u - 32) a
// is exact either way, and the f32 step y_r += (d_r * da) * S_r is the AVX2 kernel's, so
// both give bitwise the same outputs (and one token the same as a batch).
#include "backend/cpu/avx512_intrinsics.h"
#include "backend/cpu/matmul_packed_avx512.h"
#include "backend/cpu/packed_q6_k_avx512.h"
#include "backend/cpu/packed_tiles_avx512.h"

namespace ember::cpu::EMBER_AVX512_NS {

namespace {

using namespace q6x16;  // NOLINT(google-build-using-namespace): the file's own layout

// Groups g and g + step (step 0: g alone) for tokens c .. c+RN-1; r_end: the range's last
// row + 1.
template <int RN>
void micro(const MatmulArgs& p, int64_t g, int64_t step, int64_t r_end, int64_t c) {
  const uint8_t* lo_group = p.w + g * p.w_stride;
  const uint8_t* hi_group = lo_group + step * p.w_stride;
  const block_q8_K* a[RN];
  for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const block_q8_K*>(p.a + (c + j) * p.a_stride);
  __m512 acc[RN];
  for (int j = 0; j < RN; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t b = 0; b < p.k / QK_K; ++b) {
    const uint8_t* lo_sb = lo_group + b * kSuperBytes;
    const uint8_t* hi_sb = hi_group + b * kSuperBytes;
    __m512i isum[RN];
    for (int j = 0; j < RN; ++j) isum[j] = _mm512_setzero_si512();
    for (int k = 0; k < kSubBlocks / 2; ++k) {
      if constexpr (RN == 1) {  // decode: an eighth of the super-block at a time, as the AVX2 kernel
        prefetch_ahead(lo_sb + k * (kSuperBytes / 8), kSuperBytes / 8);
        prefetch_ahead(hi_sb + k * (kSuperBytes / 8), kSuperBytes / 8);
      }
      const __m512i pairs = scale_pairs(lo_sb, hi_sb, k);  // dword r: row r's (sc_2k, sc_2k+1)
      // the bias: -32 * (sc_2k * bsum_2k + sc_2k+1 * bsum_2k+1) per row (|32 sc| <= 4096)
      const __m512i bias_pairs = _mm512_slli_epi16(_mm512_sub_epi16(_mm512_setzero_si512(), pairs), 5);
      for (int j = 0; j < RN; ++j)
        isum[j] = _mm512_dpwssd_epi32(isum[j], bias_pairs, _mm512_set1_epi32(simd512::load_i32(a[j][b].bsums + 2 * k)));
      for (int h = 0; h < 2; ++h) {
        const int sub = 2 * k + h;
        // sc_sub of row r as the int32 of lane r: its int16 pair dotted with (1, 0) or (0, 1)
        // (one exact instruction; SIMDe 0.7.4 has no 512-bit arithmetic shift of dwords)
        const __m512i pick = _mm512_set1_epi32(h == 0 ? 1 : 0x10000);
        const __m512i sc = _mm512_dpwssd_epi32(_mm512_setzero_si512(), pairs, pick);
        const SubCodes16 u(lo_sb + sub * kSubBytes, hi_sb + sub * kSubBytes);
        for (int j = 0; j < RN; ++j) {
          const int8_t* av = a[j][b].qs + 16 * sub;
          // two dependency chains, summed once: integer sums
          __m512i s01 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u.q[0], simd512::broadcast4(av));
          __m512i s23 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u.q[2], simd512::broadcast4(av + 8));
          s01 = _mm512_dpbusd_epi32(s01, u.q[1], simd512::broadcast4(av + 4));
          s23 = _mm512_dpbusd_epi32(s23, u.q[3], simd512::broadcast4(av + 12));
          isum[j] = _mm512_add_epi32(isum[j], _mm512_mullo_epi32(_mm512_add_epi32(s01, s23), sc));
        }
      }
    }
    const __m512 d = simd512::fp16_pair(lo_sb + kDAt, hi_sb + kDAt);
    for (int j = 0; j < RN; ++j)
      acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(a[j][b].d)), simd512::to_f32(isum[j]), acc[j]);
  }
  for (int j = 0; j < RN; ++j) store_group_pair(p.y + (c + j) * p.y_stride, acc[j], g, step, r_end);
}

}  // namespace

void tile_q6_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  constexpr int RN = 4;
  for_each_group_pair_tile<RN>(
      r0, r1, c0, c1, [&](int64_t g, int64_t step, int64_t c) { micro<RN>(p, g, step, r1, c); },
      [&](int64_t g, int64_t step, int64_t c) { micro<1>(p, g, step, r1, c); });
}

}  // namespace ember::cpu::EMBER_AVX512_NS
