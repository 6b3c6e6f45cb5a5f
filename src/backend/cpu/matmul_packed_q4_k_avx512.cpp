// Packed Q4_K with AVX-512 VNNI: the groups of matmul_packed_q4_k_avx2.cpp (load 8j+q of a
// super-block's codes: dword r holds 4 bytes of row r, low nibbles sub-block 2j, high
// nibbles 2j+1), read by the kernel of packed_q45_k_avx512.h.
#include "backend/cpu/avx512_intrinsics.h"
#include "backend/cpu/matmul_packed_avx512.h"
#include "backend/cpu/packed_q45_k_avx512.h"

namespace ember::cpu::EMBER_AVX512_NS {

namespace {

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

}  // namespace

void tile_q4_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  q45x16::Kernel<Q4KCodes16>::tile(p, r0, r1, c0, c1);
}

}  // namespace ember::cpu::EMBER_AVX512_NS
