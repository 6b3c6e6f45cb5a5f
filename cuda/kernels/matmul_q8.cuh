// The integer side of the quantised matmul, as llama.cpp's mmvq does it: the activations are
// quantised once per call to q8_1 blocks (32 int8 values, fp16 scale d and fp16 s = d * sum),
// and every weight type is unpacked one 32-element sub-block at a time into int8 values plus
// per-16-element float scale a and offset b (element = a * q + b), so a sub-block's dot with
// a token is a few __dp4a and one or two float multiply-adds. Device code only.
#pragma once
#include <cstdint>

#include "cuda/kernels/dequant.cuh"
#include "cuda/kernels/device.cuh"
#include "tensor/dtype.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace ember::cuda {

namespace {

constexpr int kQ8Warp = 32;
constexpr int kQ8Block = 32;  // elements per activation block and per weight sub-block

__device__ __forceinline__ float q8_half(const uint8_t* p) {
  return __half2float(__ushort_as_half(*reinterpret_cast<const unsigned short*>(p)));
}
__device__ __forceinline__ float q8_half_bits(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }

// Four bytes at a 2-byte aligned address (most quant blocks are 2-byte aligned only).
__device__ __forceinline__ int q8_load4(const uint8_t* p) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<int>(static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16));
}

// Bits 0..3 of h moved to bit 4 of bytes 0..3 (the fifth bit of four q5 elements).
__device__ __forceinline__ int q8_spread_bit4(uint32_t h) {
  return static_cast<int>(((h & 1u) << 4) | ((h & 2u) << 11) | ((h & 4u) << 18) | ((h & 8u) << 25));
}

// One 32-element sub-block of a weight row: element 4k + i is byte i of q[k] (0..127 or
// signed) times a[h] plus b[h], h = element / 16.
struct Q8Sub {
  int q[8];
  float a[2];
  float b[2];
};

// Per type: how to unpack sub-block `sub` of a row, and whether scale/offset change at 16
// elements (kHalves) and whether there is an offset at all (kOffset).
template <DType T>
struct Q8Unpack;

template <>
struct Q8Unpack<DType::Q4_0> {
  static constexpr bool kHalves = false, kOffset = true;
  __device__ static void load(const uint8_t* row, int64_t sub, Q8Sub& w) {
    const uint8_t* blk = row + sub * sizeof(block_q4_0);
    w.a[0] = q8_half(blk);
    w.b[0] = -8.0f * w.a[0];
    for (int k = 0; k < 4; ++k) {
      const int v = q8_load4(blk + 2 + 4 * k);
      w.q[k] = v & 0x0F0F0F0F;
      w.q[k + 4] = (v >> 4) & 0x0F0F0F0F;
    }
  }
};

template <>
struct Q8Unpack<DType::Q4_1> {
  static constexpr bool kHalves = false, kOffset = true;
  __device__ static void load(const uint8_t* row, int64_t sub, Q8Sub& w) {
    const uint8_t* blk = row + sub * sizeof(block_q4_1);
    w.a[0] = q8_half(blk);
    w.b[0] = q8_half(blk + 2);
    for (int k = 0; k < 4; ++k) {
      const int v = q8_load4(blk + 4 + 4 * k);
      w.q[k] = v & 0x0F0F0F0F;
      w.q[k + 4] = (v >> 4) & 0x0F0F0F0F;
    }
  }
};

// q5_0 and q5_1: q4 nibbles plus the fifth bit of element j in bit j of qh.
__device__ __forceinline__ void q8_load_q5(const uint8_t* qh_p, const uint8_t* qs, Q8Sub& w) {
  const uint32_t qh = static_cast<uint32_t>(q8_load4(qh_p));
  for (int k = 0; k < 4; ++k) {
    const int v = q8_load4(qs + 4 * k);
    w.q[k] = (v & 0x0F0F0F0F) | q8_spread_bit4(qh >> (4 * k));
    w.q[k + 4] = ((v >> 4) & 0x0F0F0F0F) | q8_spread_bit4(qh >> (16 + 4 * k));
  }
}

template <>
struct Q8Unpack<DType::Q5_0> {
  static constexpr bool kHalves = false, kOffset = true;
  __device__ static void load(const uint8_t* row, int64_t sub, Q8Sub& w) {
    const uint8_t* blk = row + sub * sizeof(block_q5_0);
    w.a[0] = q8_half(blk);
    w.b[0] = -16.0f * w.a[0];
    q8_load_q5(blk + 2, blk + 6, w);
  }
};

template <>
struct Q8Unpack<DType::Q5_1> {
  static constexpr bool kHalves = false, kOffset = true;
  __device__ static void load(const uint8_t* row, int64_t sub, Q8Sub& w) {
    const uint8_t* blk = row + sub * sizeof(block_q5_1);
    w.a[0] = q8_half(blk);
    w.b[0] = q8_half(blk + 2);
    q8_load_q5(blk + 4, blk + 8, w);
  }
};

template <>
struct Q8Unpack<DType::Q8_0> {
  static constexpr bool kHalves = false, kOffset = false;
  __device__ static void load(const uint8_t* row, int64_t sub, Q8Sub& w) {
    const uint8_t* blk = row + sub * sizeof(block_q8_0);
    w.a[0] = q8_half(blk);
    w.b[0] = 0.0f;
    for (int k = 0; k < 8; ++k) w.q[k] = q8_load4(blk + 2 + 4 * k);
  }
};

// MXFP4: codes looked up to their doubled e2m1 values (signed, |v| <= 12), scale half the
// E8M0 one. The 17-byte blocks sit at any address, so the codes are read by bytes.
template <>
struct Q8Unpack<DType::MXFP4> {
  static constexpr bool kHalves = false, kOffset = false;
  __device__ static void load(const uint8_t* row, int64_t sub, Q8Sub& w) {
    const uint8_t* blk = row + sub * sizeof(block_mxfp4);
    w.a[0] = mxfp4_half_scale(blk[0]);
    w.b[0] = 0.0f;
    for (int k = 0; k < 4; ++k) {
      int lo = 0, hi = 0;
      for (int i = 0; i < 4; ++i) {
        const int byte = blk[1 + 4 * k + i];
        lo |= (mxfp4_code_value(byte & 0x0F) & 0xff) << (8 * i);
        hi |= (mxfp4_code_value(byte >> 4) & 0xff) << (8 * i);
      }
      w.q[k] = lo;
      w.q[k + 4] = hi;
    }
  }
};

// Q4_K/Q5_K: the 6-bit scale and min of sub-block j (ggml's get_scale_min_k4).
__device__ __forceinline__ void q8_scale_min_k4(const uint8_t* s, int j, float d, float dmin, Q8Sub& w) {
  int sc, m;
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
  w.a[0] = d * static_cast<float>(sc);
  w.b[0] = -dmin * static_cast<float>(m);
}

// Sub-block j of a Q4_K/Q5_K super-block: nibbles of qs[32 * (j / 2) ...], low for even j.
__device__ __forceinline__ void q8_load_k_nibbles(const uint8_t* qs, int j, Q8Sub& w) {
  const uint8_t* p = qs + 32 * (j / 2);
  const int shift = 4 * (j & 1);
  for (int k = 0; k < 8; ++k) w.q[k] = (q8_load4(p + 4 * k) >> shift) & 0x0F0F0F0F;
}

template <>
struct Q8Unpack<DType::Q4_K> {
  static constexpr bool kHalves = false, kOffset = true;
  __device__ static void load(const uint8_t* row, int64_t sub, Q8Sub& w) {
    const uint8_t* blk = row + (sub / 8) * sizeof(block_q4_K);
    const int j = static_cast<int>(sub % 8);
    q8_scale_min_k4(blk + 4, j, q8_half(blk), q8_half(blk + 2), w);
    q8_load_k_nibbles(blk + 16, j, w);
  }
};

template <>
struct Q8Unpack<DType::Q5_K> {
  static constexpr bool kHalves = false, kOffset = true;
  __device__ static void load(const uint8_t* row, int64_t sub, Q8Sub& w) {
    const uint8_t* blk = row + (sub / 8) * sizeof(block_q5_K);
    const int j = static_cast<int>(sub % 8);
    q8_scale_min_k4(blk + 4, j, q8_half(blk), q8_half(blk + 2), w);
    q8_load_k_nibbles(blk + 48, j, w);
    for (int k = 0; k < 8; ++k) w.q[k] |= ((q8_load4(blk + 16 + 4 * k) >> j) & 0x01010101) << 4;  // qh bit j
  }
};

// Q2_K/Q3_K/Q6_K: element l of sub-block s (of 8) sits in byte 32 * (s / 4) + l of the low
// bits at shift 2 * (s % 4) (Q6_K: nibbles, see below); scales per 16 elements, index 2s + h.
template <>
struct Q8Unpack<DType::Q2_K> {
  static constexpr bool kHalves = true, kOffset = true;
  __device__ static void load(const uint8_t* row, int64_t sub, Q8Sub& w) {
    const uint8_t* blk = row + (sub / 8) * sizeof(block_q2_K);
    const int s = static_cast<int>(sub % 8);
    const float d = q8_half(blk + 80), dmin = q8_half(blk + 82);
    for (int h = 0; h < 2; ++h) {
      const int sc = blk[2 * s + h];
      w.a[h] = d * static_cast<float>(sc & 0x0F);
      w.b[h] = -dmin * static_cast<float>(sc >> 4);
    }
    const uint8_t* qs = blk + 16 + 32 * (s / 4);
    for (int k = 0; k < 8; ++k) w.q[k] = (q8_load4(qs + 4 * k) >> (2 * (s % 4))) & 0x03030303;
  }
};

template <>
struct Q8Unpack<DType::Q3_K> {
  static constexpr bool kHalves = true, kOffset = true;
  __device__ static void load(const uint8_t* row, int64_t sub, Q8Sub& w) {
    const uint8_t* blk = row + (sub / 8) * sizeof(block_q3_K);
    const int s = static_cast<int>(sub % 8);
    const float d = q8_half(blk + 108);
    const uint8_t* scales = blk + 96;
    for (int h = 0; h < 2; ++h) {  // 6-bit scales stored +32 (unpack_q3_scales)
      const int j = 2 * s + h;
      const int lo = (scales[j % 8] >> (4 * (j / 8))) & 0x0F;
      const int hi = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
      w.a[h] = d * static_cast<float>((lo | (hi << 4)) - 32);
      w.b[h] = -4.0f * w.a[h];
    }
    const uint8_t* qs = blk + 32 + 32 * (s / 4);
    for (int k = 0; k < 8; ++k) {
      const int low = (q8_load4(qs + 4 * k) >> (2 * (s % 4))) & 0x03030303;
      const int high = (q8_load4(blk + 4 * k) >> s) & 0x01010101;  // hmask bit s
      w.q[k] = low | (high << 2);
    }
  }
};

template <>
struct Q8Unpack<DType::Q6_K> {
  static constexpr bool kHalves = true, kOffset = true;
  // Sub-block s: quarter r = s % 4 of half n = s / 4; its low nibbles are ql[64n + 32(r & 1)
  // + l] (high nibble for r >= 2), its top two bits qh[32n + l] at shift 2r.
  __device__ static void load(const uint8_t* row, int64_t sub, Q8Sub& w) {
    const uint8_t* blk = row + (sub / 8) * sizeof(block_q6_K);
    const int s = static_cast<int>(sub % 8);
    const int n = s / 4, r = s % 4;
    const float d = q8_half(blk + 208);
    const int8_t* scales = reinterpret_cast<const int8_t*>(blk + 192);
    for (int h = 0; h < 2; ++h) {
      w.a[h] = d * static_cast<float>(scales[2 * s + h]);
      w.b[h] = -32.0f * w.a[h];
    }
    const uint8_t* ql = blk + 64 * n + 32 * (r & 1);
    const uint8_t* qh = blk + 128 + 32 * n;
    for (int k = 0; k < 8; ++k) {
      const int low = (q8_load4(ql + 4 * k) >> (4 * (r >> 1))) & 0x0F0F0F0F;
      const int high = (q8_load4(qh + 4 * k) >> (2 * r)) & 0x03030303;
      w.q[k] = low | (high << 4);
    }
  }
};

// The dot of an unpacked weight sub-block with one token's q8_1 block. Offsets constant over
// the 32 elements use the block's sum s; per-16 ones need the half sums, by __dp4a with ones.
template <DType T>
__device__ __forceinline__ float q8_dot(const Q8Sub& w, const block_q8_1& xb) {
  const int* u = reinterpret_cast<const int*>(xb.qs);
  const float d8 = q8_half_bits(xb.d);
  int sum[2] = {0, 0};
  for (int k = 0; k < 8; ++k) sum[k / 4] = __dp4a(w.q[k], u[k], sum[k / 4]);
  if constexpr (!Q8Unpack<T>::kHalves) {
    const float r = w.a[0] * d8 * static_cast<float>(sum[0] + sum[1]);
    return Q8Unpack<T>::kOffset ? fmaf(w.b[0], q8_half_bits(xb.s), r) : r;
  } else {
    int usum[2] = {0, 0};
    for (int k = 0; k < 8; ++k) usum[k / 4] = __dp4a(u[k], 0x01010101, usum[k / 4]);
    float r = 0.0f;
    for (int h = 0; h < 2; ++h) r = fmaf(w.a[h], static_cast<float>(sum[h]), fmaf(w.b[h], static_cast<float>(usum[h]), r));
    return d8 * r;
  }
}

// Activations to q8_1: eight threads per 32-element block, four elements each; d = amax / 127
// rounded to fp16 first (so the stored scale is the one the values were rounded with),
// s = d * sum(q) in fp16.
constexpr int kQ8ThreadsPerBlock = kQ8Block / 4;

// One thread's four elements v (elements 4 quad .. +3 of block b). Every lane of the warp
// calls, in aligned groups of 8 that are all active or all not (an inactive group passes
// zeros and writes nothing).
__device__ __forceinline__ void q8_1_quantize_quad(const float (&v)[4], bool active, block_q8_1* b, int quad) {
  float amax = fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])));
  for (int o = kQ8ThreadsPerBlock / 2; o > 0; o >>= 1)
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o, kQ8ThreadsPerBlock));
  const float d = __half2float(__float2half(amax / 127.0f));
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  int packed = 0, sum = 0;
  for (int k = 0; k < 4; ++k) {
    const int q = max(-127, min(127, static_cast<int>(rintf(v[k] * id))));
    sum += q;
    packed |= (q & 0xff) << (8 * k);
  }
  for (int o = kQ8ThreadsPerBlock / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o, kQ8ThreadsPerBlock);
  if (!active) return;
  reinterpret_cast<int*>(b->qs)[quad] = packed;
  if (quad == 0) {
    b->d = __half_as_ushort(__float2half(d));
    b->s = __half_as_ushort(__float2half(d * static_cast<float>(sum)));
  }
}

// grid (ceil(n_blocks * 8 / blockDim.x), n_tokens), blockDim.x a multiple of 32; out holds
// n_tokens * n_blocks blocks.
__global__ void quantize_q8_1_kernel(const float* __restrict__ x, int64_t x_stride, int64_t n_blocks,
                                     block_q8_1* __restrict__ out) {
  const int64_t t = blockIdx.y;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;  // 4 elements each
  const bool active = i < n_blocks * kQ8ThreadsPerBlock;
  float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (active)
    for (int k = 0; k < 4; ++k) v[k] = x[t * x_stride + 4 * i + k];
  q8_1_quantize_quad(v, active, out + t * n_blocks + i / kQ8ThreadsPerBlock, static_cast<int>(i % kQ8ThreadsPerBlock));
}

}  // namespace

}  // namespace ember::cuda
