// Device-side dequantisation of every weight/KV type ember computes with: ggml's formulas
// exactly as src/tensor/quant_legacy.cpp and quant_k.cpp evaluate them (same f32 operations
// in the same order, products never fused into the following add), so a kernel's f32 values
// are bit for bit those of ember::dequantize_row.
//
//   load_element(type, row, i)          element i of a row stored as `type`
//   dequant_block32(type, row, sub, out) elements [32*sub, 32*sub + 32) of the row
//
// Both go through one per-type function of (block, 32-element sub-block s, lane l) chosen by
// one switch (with_format): with l a constant after unrolling, dequant_block32's 32 calls
// share the scale decoding (the compiler merges the identical loads), and load_element is
// the same code for one l.
// Blocks are read field by field (every block size but MXFP4's 17 is even, so fp16 fields are
// 2-aligned when the row is; MXFP4 has bytes only; the 4-byte qh of Q5 is read by bytes
// because it is not 4-aligned).
#pragma once
#include <cstdint>

#include "cuda/kernels/device.cuh"
#include "tensor/dtype.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace ember::cuda {

namespace {

// --- f32 arithmetic that nvcc may neither contract into an fma nor relax under fast math:
// the CPU reference computes each product and sum rounded on its own.
__device__ __forceinline__ float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
__device__ __forceinline__ float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
__device__ __forceinline__ float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
__device__ __forceinline__ float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// --- fp16 / bf16 bits, as tensor/fp16.h converts them.
__device__ __forceinline__ float half_bits_to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }

__device__ __forceinline__ float bf16_bits_to_float(uint16_t h) {
  return __uint_as_float(static_cast<unsigned>(h) << 16);
}

// Round to nearest even; NaN keeps its top payload bits and is made quiet, as fp16.h does
// (the GPU's conversion would give its canonical NaN instead).
__device__ __forceinline__ uint16_t float_to_half_bits(float f) {
  const unsigned x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x3ffu));
  return __half_as_ushort(__float2half_rn(f));
}

// --- one element: block b, 32-element sub-block s of the block (0 for the 32-blocks),
// lane l in [0, 32). K-quant element e = 32*s + l sits in half h = s / 4, quarter k = s % 4.

__device__ __forceinline__ float deq_q4_0(const block_q4_0* b, int s, int l) {
  const int q = (b->qs[l % 16] >> (4 * (l / 16))) & 0x0F;
  return mul_rn(static_cast<float>(q - 8), half_bits_to_float(b->d));
}

__device__ __forceinline__ float deq_q4_1(const block_q4_1* b, int s, int l) {
  const int q = (b->qs[l % 16] >> (4 * (l / 16))) & 0x0F;
  return add_rn(mul_rn(static_cast<float>(q), half_bits_to_float(b->d)), half_bits_to_float(b->m));
}

// The fifth bit of element l: bit l of the little-endian 32-bit qh.
__device__ __forceinline__ int q5_high_bit(const uint8_t qh[4], int l) { return ((qh[l / 8] >> (l % 8)) & 1) << 4; }

__device__ __forceinline__ float deq_q5_0(const block_q5_0* b, int s, int l) {
  const int q = ((b->qs[l % 16] >> (4 * (l / 16))) & 0x0F) | q5_high_bit(b->qh, l);
  return mul_rn(static_cast<float>(q - 16), half_bits_to_float(b->d));
}

__device__ __forceinline__ float deq_q5_1(const block_q5_1* b, int s, int l) {
  const int q = ((b->qs[l % 16] >> (4 * (l / 16))) & 0x0F) | q5_high_bit(b->qh, l);
  return add_rn(mul_rn(static_cast<float>(q), half_bits_to_float(b->d)), half_bits_to_float(b->m));
}

__device__ __forceinline__ float deq_q8_0(const block_q8_0* b, int s, int l) {
  return mul_rn(static_cast<float>(b->qs[l]), half_bits_to_float(b->d));
}

__device__ __forceinline__ float deq_q2_K(const block_q2_K* b, int s, int l) {
  const int sc = b->scales[2 * s + l / 16];  // 16-element scale groups
  const float dl = mul_rn(half_bits_to_float(b->d), static_cast<float>(sc & 0x0F));
  const float ml = mul_rn(half_bits_to_float(b->dmin), static_cast<float>(sc >> 4));
  const int q = (b->qs[32 * (s / 4) + l] >> (2 * (s % 4))) & 3;
  return sub_rn(mul_rn(dl, static_cast<float>(q)), ml);
}

// Q3_K's scale j: low nibble in byte j % 8 (high half for j >= 8), top 2 bits in byte
// 8 + j % 4 at bit 2 * (j / 4), stored + 32.
__device__ __forceinline__ int q3_K_scale(const uint8_t* packed, int j) {
  const int lo = (packed[j % 8] >> (4 * (j / 8))) & 0x0F;
  const int hi = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (lo | (hi << 4)) - 32;
}

__device__ __forceinline__ float deq_q3_K(const block_q3_K* b, int s, int l) {
  const float dl = mul_rn(half_bits_to_float(b->d), static_cast<float>(q3_K_scale(b->scales, 2 * s + l / 16)));
  const int lo = (b->qs[32 * (s / 4) + l] >> (2 * (s % 4))) & 3;
  const int q = lo - (((b->hmask[l] >> s) & 1) ? 0 : 4);  // the high bit of sub-block s is bit s of hmask[l]
  return mul_rn(dl, static_cast<float>(q));
}

// Q4_K/Q5_K's 6-bit scale and min of sub-block j (quant_k.cpp get_scale_min_k4).
__device__ __forceinline__ void k4_scale_min(const uint8_t* q, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// d*sc * q - dmin*m, shared by Q4_K and Q5_K once q is assembled.
__device__ __forceinline__ float k4_value(fp16_bits d, fp16_bits dmin, const uint8_t* scales, int s, int q) {
  int sc, m;
  k4_scale_min(scales, s, &sc, &m);
  const float d1 = mul_rn(half_bits_to_float(d), static_cast<float>(sc));
  const float m1 = mul_rn(half_bits_to_float(dmin), static_cast<float>(m));
  return sub_rn(mul_rn(d1, static_cast<float>(q)), m1);
}

__device__ __forceinline__ float deq_q4_K(const block_q4_K* b, int s, int l) {
  const int q = (b->qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0x0F;
  return k4_value(b->d, b->dmin, b->scales, s, q);
}

__device__ __forceinline__ float deq_q5_K(const block_q5_K* b, int s, int l) {
  const int q = ((b->qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 0x0F) + (((b->qh[l] >> s) & 1) << 4);
  return k4_value(b->d, b->dmin, b->scales, s, q);
}

__device__ __forceinline__ float deq_q6_K(const block_q6_K* b, int s, int l) {
  const int h = s / 4, k = s % 4;
  const int lo = (b->ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0F;
  const int hi = (b->qh[32 * h + l] >> (2 * k)) & 3;
  const int q = (lo | (hi << 4)) - 32;
  const float ds = mul_rn(half_bits_to_float(b->d), static_cast<float>(b->scales[2 * s + l / 16]));
  return mul_rn(ds, static_cast<float>(q));
}

// MXFP4's doubled e2m1 value of a 4-bit code (kMxfp4Values, computed: a host table is not
// readable in device code): magnitudes 0..3 as they are, then 4, 6, 8, 12; bit 3 the sign.
__device__ __forceinline__ int mxfp4_code_value(int code) {
  const int m = code & 7;
  const int mag = m < 4 ? m : (2 + (m & 1)) << ((m >> 1) - 1);
  return code & 8 ? -mag : mag;
}

__device__ __forceinline__ float deq_mxfp4(const block_mxfp4* b, int s, int l) {
  const int code = (b->qs[l % 16] >> (4 * (l / 16))) & 0x0F;
  return mul_rn(static_cast<float>(mxfp4_code_value(code)), mxfp4_half_scale(b->e));
}

// The element types seen as 32-element "blocks", so that every type has the same shape.
struct run32_f32 { float v[32]; };
struct run32_16 { uint16_t v[32]; };
__device__ __forceinline__ float deq_f32(const run32_f32* b, int s, int l) { return b->v[l]; }
__device__ __forceinline__ float deq_f16(const run32_16* b, int s, int l) { return half_bits_to_float(b->v[l]); }
__device__ __forceinline__ float deq_bf16(const run32_16* b, int s, int l) { return bf16_bits_to_float(b->v[l]); }

// A storage format: its block type B, B's count of 32-element sub-blocks, and the element
// function. at(row, sub, l) is element 32*sub + l of a row.
template <class B, int kSubs, float (*Deq)(const B*, int, int)>
struct Format {
  __device__ __forceinline__ static float at(const uint8_t* row, int64_t sub, int l) {
    return Deq(reinterpret_cast<const B*>(row) + sub / kSubs, static_cast<int>(sub % kSubs), l);
  }
};

// visit(Format<...>{}) for `type`, the one switch over types: a caller's loop inside visit
// is compiled once per format with the format known. Unknown types give NaN (launchers
// reject them first with dequant_supported).
template <class Visit>
__device__ __forceinline__ float with_format(DType type, Visit visit) {
  switch (type) {
    case DType::F32: return visit(Format<run32_f32, 1, deq_f32>{});
    case DType::F16: return visit(Format<run32_16, 1, deq_f16>{});
    case DType::BF16: return visit(Format<run32_16, 1, deq_bf16>{});
    case DType::Q4_0: return visit(Format<block_q4_0, 1, deq_q4_0>{});
    case DType::Q4_1: return visit(Format<block_q4_1, 1, deq_q4_1>{});
    case DType::Q5_0: return visit(Format<block_q5_0, 1, deq_q5_0>{});
    case DType::Q5_1: return visit(Format<block_q5_1, 1, deq_q5_1>{});
    case DType::Q8_0: return visit(Format<block_q8_0, 1, deq_q8_0>{});
    case DType::Q2_K: return visit(Format<block_q2_K, 8, deq_q2_K>{});
    case DType::Q3_K: return visit(Format<block_q3_K, 8, deq_q3_K>{});
    case DType::Q4_K: return visit(Format<block_q4_K, 8, deq_q4_K>{});
    case DType::Q5_K: return visit(Format<block_q5_K, 8, deq_q5_K>{});
    case DType::Q6_K: return visit(Format<block_q6_K, 8, deq_q6_K>{});
    case DType::MXFP4: return visit(Format<block_mxfp4, 1, deq_mxfp4>{});
    default: return __uint_as_float(0x7fc00000u);
  }
}

// Element i of a row stored as `type`. Reads only the element's own bytes and its block's
// scales.
__device__ __forceinline__ float load_element(DType type, const void* row, int64_t i) {
  const uint8_t* r = static_cast<const uint8_t*>(row);
  return with_format(type, [=](auto format) { return format.at(r, i / 32, static_cast<int>(i % 32)); });
}

// The 32 elements [32*sub, 32*sub + 32) of a row stored as `type` (the element types too).
// Inline so that `out` stays in registers.
__device__ __forceinline__ void dequant_block32(DType type, const void* row, int64_t sub, float out[32]) {
  const uint8_t* r = static_cast<const uint8_t*>(row);
  const float bad = with_format(type, [=](auto format) {
#pragma unroll
    for (int l = 0; l < 32; ++l) out[l] = format.at(r, sub, l);
    return 0.0f;
  });
  if (bad != 0.0f) {  // an unknown type: NaN everywhere rather than stale values
#pragma unroll
    for (int l = 0; l < 32; ++l) out[l] = bad;
  }
}

// True for the types above (a launcher's check before a kernel reads a row of it).
inline bool dequant_supported(DType type) {
  switch (type) {
    case DType::F32: case DType::F16: case DType::BF16: case DType::Q4_0: case DType::Q4_1: case DType::Q5_0:
    case DType::Q5_1: case DType::Q8_0: case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K:
    case DType::Q6_K: case DType::MXFP4:
      return true;
    default:
      return false;
  }
}

}  // namespace

}  // namespace ember::cuda
