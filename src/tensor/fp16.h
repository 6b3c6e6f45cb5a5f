// IEEE half (fp16) and bfloat16 <-> f32 conversions, bit-exact with the hardware
// instructions (F16C vcvtps2ph with round-to-nearest-even, and ggml's bf16 rounding).
// Plain inline bit manipulation so host code needs no special compiler flags; SIMD kernels
// use the vector instructions and are tested against these.
#pragma once
#include <stdint.h>
#include <string.h>

namespace ember {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

inline float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// fp16 -> f32 is exact for every input, including subnormals, inf and NaN (payload kept).
inline float fp16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp == 0) {
    // zero or subnormal: mant * 2^-24, exact in f32
    float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));  // rebias 15 -> 127
}

// f32 -> fp16 with round-to-nearest-even; overflow gives inf, NaN stays a (quiet) NaN.
inline uint16_t f32_to_fp16(float f) {
  uint32_t x = f32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((x >> 13) & 0x3ffu));  // NaN
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (x < 0x38800000u) {
    // Below the smallest normal half (2^-14): adding 0.5f aligns the value so the FPU's own
    // round-to-nearest-even lands on the half subnormal grid (ulp 2^-24).
    float v = f32_from_bits(x) + 0.5f;
    return static_cast<uint16_t>(sign | (f32_bits(v) - 0x3f000000u));
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
  const uint32_t odd = (x >> 13) & 1u;
  x += 0xc8000fffu + odd;  // (15 - 127) << 23, plus the rounding bias 0xfff (+1 when odd)
  return static_cast<uint16_t>(sign | (x >> 13));
}

inline float bf16_to_f32(uint16_t h) { return f32_from_bits(static_cast<uint32_t>(h) << 16); }

// f32 -> bf16 with round-to-nearest-even; NaN is kept and forced quiet (as ggml does).
inline uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace ember
