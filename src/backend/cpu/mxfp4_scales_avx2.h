// MXFP4's per-row scales for the packed MXFP4 kernels (matmul_packed_mxfp4_avx2.cpp and, as
// AVX2 halves, matmul_packed_mxfp4_avx512.cpp: SIMDe 0.7.4 has no 512-bit byte widening).
// In an unnamed namespace on purpose: each kernel file compiles its own copy with its own
// instruction-set flags; one copy chosen by the linker could carry AVX-512 encodings into
// the AVX2 path.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace ember::cpu {
namespace {

// The 8 rows' half scales 2^(e - 128) from their exponents at e8, bit for bit
// mxfp4_half_scale: (e - 1) << 23 for e >= 2, the subnormals 0x00200000 << e for e = 0, 1.
inline __m256 mxfp4_half_scales(const uint8_t* e8) {
  int64_t raw;
  std::memcpy(&raw, e8, 8);
  const __m256i e = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(raw));
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, sub, small));
}

}  // namespace
}  // namespace ember::cpu
