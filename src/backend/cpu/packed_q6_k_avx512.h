// The packed Q6_K groups of matmul_packed_q6_k_avx2.cpp as the 16-row kernels read them: the
// layout and the unpacking of one sub-block's codes of two groups. Included by
// matmul_packed_q6_k_avx512.cpp and matmul_packed_q6_k_amx.cpp only, after
// avx512_intrinsics.h.
#pragma once
#include "backend/cpu/packed_tiles_avx512.h"

namespace ember::cpu::EMBER_AVX512_NS {
namespace {  // NOLINT(google-build-namespaces): each kernel file gets its own copy

namespace q6x16 {

// The layout of matmul_packed_q6_k_avx2.cpp.
constexpr int kSubBlocks = QK_K / 16;
constexpr size_t kSubBytes = 3 * 32;                                   // X, Y, Z
constexpr size_t kScalesAt = kSubBlocks * kSubBytes;                    // 1536
constexpr size_t kDAt = kScalesAt + kGroupRows * kSubBlocks;            // 1664
constexpr size_t kSuperBytes = kDAt + kGroupRows * sizeof(fp16_bits);   // 1680
static_assert(kSuperBytes == kGroupRows * sizeof(block_q6_K), "the AVX2 kernel's groups");

// The four code vectors of one sub-block of two groups (elements 0..3, 4..7, 8..11, 12..15).
struct SubCodes16 {
  __m512i q[4];
  SubCodes16(const uint8_t* lo_sub, const uint8_t* hi_sub) {
    const __m512i low6 = _mm512_set1_epi8(0x3F), top2 = _mm512_set1_epi8(static_cast<char>(0xC0));
    const __m512i x = simd512::load_pair(lo_sub, hi_sub);
    const __m512i y = simd512::load_pair(lo_sub + 32, hi_sub + 32);
    const __m512i z = simd512::load_pair(lo_sub + 64, hi_sub + 64);
    q[0] = _mm512_and_si512(x, low6);
    q[1] = _mm512_and_si512(y, low6);
    q[2] = _mm512_and_si512(z, low6);
    // The top bits are masked before each 16-bit shift: nothing crosses between bytes.
    __m512i t = _mm512_srli_epi16(_mm512_and_si512(x, top2), 2);
    t = _mm512_srli_epi16(_mm512_or_si512(t, _mm512_and_si512(y, top2)), 2);
    q[3] = _mm512_srli_epi16(_mm512_or_si512(t, _mm512_and_si512(z, top2)), 2);
  }
};

// The scale pairs k of two groups' super-blocks: dword r holds row r's (sc_2k, sc_2k+1) as int16.
inline __m512i scale_pairs(const uint8_t* lo_sb, const uint8_t* hi_sb, int k) {
  const __m256i bytes = _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lo_sb + kScalesAt + 16 * k))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(hi_sb + kScalesAt + 16 * k)), 1);
  return _mm512_cvtepi8_epi16(bytes);
}

}  // namespace q6x16

}  // namespace
}  // namespace ember::cpu::EMBER_AVX512_NS
