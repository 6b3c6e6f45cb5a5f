// Packed Q8_0 with AVX-512 VNNI (see matmul_packed_avx512.h and avx512_intrinsics.h).
//
// Reads the groups of matmul_packed_q8_0_avx2.cpp (nb = k / 32 blocks: first nb x 8 fp16
// scales, then per block 8 loads of 32 B whose dword r holds 4 int8 codes of row r), two
// groups per 512-bit load. Both operands are signed and dpbusd takes one unsigned: as in the
// AVX2 kernel, the codes go as |w| (shared by the tokens of a tile; -128 gives 128 unsigned)
// and each token's activations with w's signs, here by negating the bytes under w's sign
// mask (AVX-512 has no vpsignb; where w = 0 the product is 0 either way). dpbusd then adds
// the 4 products of each row to its int32 lane, for the AVX2 kernel's maddubs, madd and add.
// The block's int32 dot S_r is exact either way, and the f32 step
//   y_r += (d_r * da) * S_r
// is the AVX2 kernel's, so both give bitwise the same outputs (and one token the same as a
// batch).
#include "backend/cpu/avx512_intrinsics.h"
#include "backend/cpu/matmul_packed_avx512.h"
#include "backend/cpu/packed_tiles_avx512.h"

namespace ember::cpu::EMBER_AVX512_NS {

namespace {

constexpr size_t kScaleBytes = kGroupRows * 2;     // per block
constexpr size_t kCodeBytes = kGroupRows * QK8_0;  // per block: 8 loads of 32 B
constexpr int kLoads = QK8_0 / 4;

// Groups g and g + step (step 0: g alone) for tokens c .. c+RN-1; r_end: the range's last
// row + 1.
template <int RN>
void micro(const MatmulArgs& p, int64_t g, int64_t step, int64_t r_end, int64_t c) {
  const int64_t nb = p.k / QK8_0;
  const uint8_t* lo_scales = p.w + g * p.w_stride;
  const uint8_t* hi_scales = lo_scales + step * p.w_stride;
  const uint8_t* lo_codes = lo_scales + nb * kScaleBytes;
  const uint8_t* hi_codes = hi_scales + nb * kScaleBytes;
  const block_q8s* a[RN];
  for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const block_q8s*>(p.a + (c + j) * p.a_stride);
  __m512 acc[RN];
  for (int j = 0; j < RN; ++j) acc[j] = _mm512_setzero_ps();
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t b = 0; b < nb; ++b) {
    if constexpr (RN == 1) {  // decode: see prefetch_ahead; scales and codes of both groups
      prefetch_ahead(lo_scales + b * kScaleBytes, kScaleBytes);
      prefetch_ahead(hi_scales + b * kScaleBytes, kScaleBytes);
      prefetch_ahead(lo_codes + b * kCodeBytes, kCodeBytes);
      prefetch_ahead(hi_codes + b * kCodeBytes, kCodeBytes);
    }
    // Two dependency chains per token (even and odd loads), summed once: integer sums.
    __m512i dot[RN][2];
    for (int j = 0; j < RN; ++j) dot[j][0] = dot[j][1] = zero;
    for (int q = 0; q < kLoads; ++q) {
      const __m512i w = simd512::load_pair(lo_codes + b * kCodeBytes + 32 * q, hi_codes + b * kCodeBytes + 32 * q);
      const __m512i uw = _mm512_abs_epi8(w);
      const __mmask64 negative = _mm512_movepi8_mask(w);
      for (int j = 0; j < RN; ++j) {
        const __m512i av = simd512::broadcast4(a[j][b].qs + 4 * q);
        const __m512i signed_av = _mm512_mask_sub_epi8(av, negative, zero, av);
        dot[j][q % 2] = _mm512_dpbusd_epi32(dot[j][q % 2], uw, signed_av);
      }
    }
    const __m512 d = simd512::fp16_pair(lo_scales + b * kScaleBytes, hi_scales + b * kScaleBytes);
    for (int j = 0; j < RN; ++j) {
      const __m512 s = simd512::to_f32(_mm512_add_epi32(dot[j][0], dot[j][1]));
      acc[j] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(a[j][b].d)), s, acc[j]);
    }
  }
  for (int j = 0; j < RN; ++j) store_group_pair(p.y + (c + j) * p.y_stride, acc[j], g, step, r_end);
}

}  // namespace

void tile_q8_0(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  constexpr int RN = 4;
  for_each_group_pair_tile<RN>(
      r0, r1, c0, c1, [&](int64_t g, int64_t step, int64_t c) { micro<RN>(p, g, step, r1, c); },
      [&](int64_t g, int64_t step, int64_t c) { micro<1>(p, g, step, r1, c); });
}

}  // namespace ember::cpu::EMBER_AVX512_NS
