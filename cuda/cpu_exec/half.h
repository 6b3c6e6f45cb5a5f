// __half and __nv_bfloat16 for kernels compiled as plain C++ (part of cuda_compat.h): the
// storage types with the conversions kernels use, on ember's own round-to-nearest-even
// conversions (tensor/fp16.h). Arithmetic is what CUDA's headers offer as implicit float
// conversions plus __hadd/__hmul; NaN payloads may differ from the GPU's canonical NaN.
#pragma once
#include <cstdint>

#include "cuda/cpu_exec/builtins.h"
#include "tensor/fp16.h"

struct __half {
  uint16_t bits;
  __half() = default;
  __half(float f) : bits(ember::f32_to_fp16(f)) {}
  operator float() const { return ember::fp16_to_f32(bits); }
};

struct __nv_bfloat16 {
  uint16_t bits;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : bits(ember::f32_to_bf16(f)) {}
  operator float() const { return ember::bf16_to_f32(bits); }
};

struct alignas(4) __half2 {
  __half x, y;
};
struct alignas(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;
};
using half = __half;
using half2 = __half2;
using nv_bfloat16 = __nv_bfloat16;
using nv_bfloat162 = __nv_bfloat162;

inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return float(h); }
inline unsigned short __half_as_ushort(__half h) { return h.bits; }
inline __half __ushort_as_half(unsigned short u) {
  __half h;
  h.bits = u;
  return h;
}
// Through f32 these round as the GPU's half adds and multiplies do: an f32 product of halves
// is exact, and an f32 sum is close enough that rounding it to half never rounds twice.
inline __half __hadd(__half a, __half b) { return __half(float(a) + float(b)); }
inline __half __hmul(__half a, __half b) { return __half(float(a) * float(b)); }
inline __half2 __halves2half2(__half lo, __half hi) { return {lo, hi}; }
inline __half2 __floats2half2_rn(float lo, float hi) { return {__half(lo), __half(hi)}; }
inline __half2 __float2half2_rn(float f) { return {__half(f), __half(f)}; }
inline float2 __half22float2(__half2 h) { return {float(h.x), float(h.y)}; }
inline float __low2float(__half2 h) { return float(h.x); }
inline float __high2float(__half2 h) { return float(h.y); }

inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 h) { return float(h); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.bits; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) {
  __nv_bfloat16 h;
  h.bits = u;
  return h;
}
inline __nv_bfloat162 __floats2bfloat162_rn(float lo, float hi) { return {__nv_bfloat16(lo), __nv_bfloat16(hi)}; }
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return {float(h.x), float(h.y)}; }
