// Packed Q5_K with AVX-512 VNNI: the groups of matmul_packed_q5_k_avx2.cpp (Q4_K's low four
// bits, then the fifth bits regrouped so that load 2j + q/4 holds, in byte 4r+k of row r,
// bits 2(q%4) and 2(q%4)+1: the fifth bits of element 4q+k of sub-blocks 2j and 2j+1), read by
// the kernel of packed_q45_k_avx512.h. Codes in [0, 31] sum in int32 there: no int16 bound.
#include "backend/cpu/avx512_intrinsics.h"
#include "backend/cpu/matmul_packed_avx512.h"
#include "backend/cpu/packed_q45_k_avx512.h"

namespace ember::cpu::EMBER_AVX512_NS {

namespace {

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

}  // namespace

void tile_q5_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  q45x16::Kernel<Q5KCodes16>::tile(p, r0, r1, c0, c1);
}

}  // namespace ember::cpu::EMBER_AVX512_NS
