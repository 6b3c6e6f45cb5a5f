// The intrinsics of the AVX-512 kernels (src/**/*_avx512.cpp), which are compiled twice:
// - natively, into ember_core, with the AVX-512 F/BW/VL/DQ/VNNI flags (CMakeLists.txt), and
//   called only after the run-time check (cpu_features().avx512_vnni);
// - emulated (EMBER_AVX512_EMULATED), for test_matmul_avx512 only: the same source on SIMDe's
//   portable versions of the _mm512_* intrinsics, built with AVX2 flags, so that a machine
//   without AVX-512 runs the kernels' exact logic in a test.
// Both copies define the same functions, so each lives in its own namespace, EMBER_AVX512_NS:
// ember::cpu::avx512 (native) or ember::cpu::avx512_emulated; the test links both.
//
// The few operations SIMDe 0.7.4 lacks (cvtepi32_ps and cvtph_ps on 512 bits) and the loads
// and stores of two 8-row groups are the helpers below, defined for both builds from AVX2
// halves where SIMDe has no 512-bit form: each lane gets the same operation either way
// (int32 -> f32 rounds to nearest even, fp16 -> f32 is exact).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(EMBER_AVX512_EMULATED)
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
// SIMDe then builds each 512-bit op from two native AVX2 ones, FMAs fused as on AVX-512.
#error "the emulated AVX-512 kernels are built with -mavx2 -mfma -mf16c"
#endif
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define EMBER_AVX512_NS avx512_emulated
#else
// GCC 12's AVX-512 headers start intrinsics from a self-initialised "undefined" vector, which
// -Wmaybe-uninitialized (and, for _mm512_castps256_ps512, -Wuninitialized) reports wherever
// they are inlined (GCC bug 105593, fixed in 13). Set before the header, for the AVX-512
// translation units only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VL__) || !defined(__AVX512VNNI__)
#error "*_avx512.cpp files are built with the AVX-512 F/BW/VL/VNNI flags (or EMBER_AVX512_EMULATED)"
#endif
#include <immintrin.h>
#define EMBER_AVX512_NS avx512
#endif

namespace ember::cpu::EMBER_AVX512_NS {
namespace simd512 {

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The four bytes at p in every dword (the activations that dpbusd pairs with 4 codes per row).
inline __m512i broadcast4(const int8_t* p) { return _mm512_set1_epi32(load_i32(p)); }

// 32 bytes from lo (lanes of rows 0-7) and 32 from hi (rows 8-15): the same load of two groups.
inline __m512i load_pair(const uint8_t* lo, const uint8_t* hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo))),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(hi)), 1);
}

// 8 fp16 at lo and 8 at hi as 16 f32 lanes.
inline __m512 fp16_pair(const uint8_t* lo, const uint8_t* hi) {
  const __m128i l = _mm_loadu_si128(reinterpret_cast<const __m128i*>(lo));
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hi));
#if defined(EMBER_AVX512_EMULATED)
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_cvtph_ps(l)), _mm256_cvtph_ps(h), 1);
#else
  return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(l), h, 1));
#endif
}

inline __m512 to_f32(__m512i v) {
#if defined(EMBER_AVX512_EMULATED)
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_cvtepi32_ps(_mm512_castsi512_si256(v))),
                            _mm256_cvtepi32_ps(_mm512_extracti64x4_epi64(v, 1)), 1);
#else
  return _mm512_cvtepi32_ps(v);
#endif
}

// Stores the first min(rows, 16) of 16 rows' outputs held one per lane.
inline void store_rows(float* y, __m512 v, int64_t rows) {
  if (rows >= 16) {
    _mm512_storeu_ps(y, v);
  } else {
    alignas(64) float out[16];
    _mm512_store_ps(out, v);
    for (int64_t r = 0; r < rows; ++r) y[r] = out[r];
  }
}

}  // namespace simd512
}  // namespace ember::cpu::EMBER_AVX512_NS
