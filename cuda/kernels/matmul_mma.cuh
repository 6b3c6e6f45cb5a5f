// Prefill matmul for quantised weights (many tokens): 64 weight rows x 64 tokens per thread
// block on int8 tensor cores. Per k-tile of 4 sub-blocks (128 elements) the block unpacks the
// weights to int8 (Q8Unpack, matmul_q8.cuh) and copies the tokens' q8_1 blocks into shared
// memory, then each of the 4 warps multiplies a 32 x 32 corner with mma.sync m16n8k16 s8 per
// 16-element half and scales the exact int32 sums with the weight's a, b and the token's d,
// s as the row kernel does, so the two agree up to float summation order.
// mma needs sm_80 and is not emulated by cpu_exec: the portable path has each lane compute
// the same four accumulator elements the instruction gives it, from the same shared tiles.
#pragma once
#include <cstdint>

#include "cuda/kernels/device.cuh"
#include "cuda/kernels/matmul_q8.cuh"

namespace ember::cuda {

namespace {

constexpr int kMmaRows = 64;    // weight rows per block
constexpr int kMmaTokens = 64;  // tokens per block
constexpr int kMmaSubs = 4;     // 32-element sub-blocks per k-tile
constexpr int kMmaThreads = 128;
// Ints per row of a shared tile: 4 sub-blocks of 8 ints, plus 4 so that the 8 rows a
// fragment load touches fall in different banks.
constexpr int kMmaStride = kMmaSubs * 8 + 4;

// c += A B for a 16 x 16 int8 slice of A (rows of `stride` ints from a) times a 16 x 8 one of
// B (token columns of `stride` ints from b), in the m16n8k16 accumulator layout: lane holds
// rows g, g + 8 and columns 2t, 2t + 1 (g = lane / 4, t = lane % 4).
__device__ __forceinline__ void mma_s8_k16(const int* a, const int* b, int stride, int lane, int (&c)[4]) {
  const int g = lane >> 2, t = lane & 3;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const int a0 = a[g * stride + t], a1 = a[(g + 8) * stride + t], b0 = b[g * stride + t];
  asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
               : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
               : "r"(a0), "r"(a1), "r"(b0));
#else
  for (int e = 0; e < 4; ++e) {
    const int* ar = a + (g + 8 * (e >> 1)) * stride;
    const int* bc = b + (2 * t + (e & 1)) * stride;
    for (int k = 0; k < 4; ++k) c[e] = __dp4a(ar[k], bc[k], c[e]);
  }
#endif
}

struct MmaTiles {
  int w[kMmaRows][kMmaStride];           // unpacked weights
  int x[kMmaTokens][kMmaStride];         // tokens' q8 values
  float wa[kMmaRows][kMmaSubs * 2];      // weight scale per sub-block half
  float wb[kMmaRows][kMmaSubs * 2];      // weight offset per half
  float xd[kMmaTokens][kMmaSubs];        // token scale d
  float xo[kMmaTokens][kMmaSubs * 2];    // what wb multiplies: s, or (kHalves) the half's sum of q
};

// Stage k-tile [sub0, sub0 + 4) of rows [row0, +64) and tokens [tok0, +64); zeros past the ends.
template <DType T>
__device__ void mma_stage(MmaTiles& s, const uint8_t* w, size_t w_stride, int64_t n_rows, int64_t row0,
                          const block_q8_1* xq, int64_t n_sub, int64_t n_tokens, int64_t tok0, int64_t sub0) {
  for (int i = threadIdx.x; i < kMmaRows * kMmaSubs; i += kMmaThreads) {
    const int r = i / kMmaSubs, sb = i % kMmaSubs;
    Q8Sub q = {};
    if (row0 + r < n_rows && sub0 + sb < n_sub) Q8Unpack<T>::load(w + (row0 + r) * w_stride, sub0 + sb, q);
    #pragma unroll
    for (int k = 0; k < 8; ++k) s.w[r][sb * 8 + k] = q.q[k];
    #pragma unroll
    for (int h = 0; h < 2; ++h) {  // half 1 only where kHalves
      s.wa[r][sb * 2 + h] = q.a[h];
      s.wb[r][sb * 2 + h] = q.b[h];
    }
  }
  for (int i = threadIdx.x; i < kMmaTokens * kMmaSubs; i += kMmaThreads) {
    const int tk = i / kMmaSubs, sb = i % kMmaSubs;
    int u[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    float d = 0.0f, sum = 0.0f;
    if (tok0 + tk < n_tokens && sub0 + sb < n_sub) {
      const block_q8_1& b = xq[(tok0 + tk) * n_sub + sub0 + sb];
      #pragma unroll
      for (int k = 0; k < 8; ++k) u[k] = reinterpret_cast<const int*>(b.qs)[k];
      d = q8_half_bits(b.d);
      sum = q8_half_bits(b.s);
    }
    #pragma unroll
    for (int k = 0; k < 8; ++k) s.x[tk][sb * 8 + k] = u[k];
    s.xd[tk][sb] = d;
    #pragma unroll
    for (int h = 0; h < 2; ++h) {
      int usum = 0;
      #pragma unroll
      for (int k = 4 * h; k < 4 * h + 4; ++k) usum = __dp4a(u[k], 0x01010101, usum);
      s.xo[tk][sb * 2 + h] = Q8Unpack<T>::kHalves ? static_cast<float>(usum) : (h == 0 ? sum : 0.0f);
    }
  }
}

// grid (ceil(n_rows / 64), ceil(n_tokens / 64)), kMmaThreads threads. Warp (wm, wn) of the
// 2 x 2 warps owns rows 32 wm .. +32 and tokens 32 wn .. +32 of the block's tile.
template <DType T>
__global__ void __launch_bounds__(kMmaThreads, 1)
    matmul_q8_mma_kernel(const uint8_t* __restrict__ w, size_t w_stride, int64_t n_rows, int64_t n_sub,
                         const block_q8_1* __restrict__ xq, int64_t n_tokens, float* __restrict__ y,
                         int64_t y_stride) {
  __shared__ MmaTiles s;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane >> 2, t = lane & 3;
  const int wr = (warp / 2) * 32, wt = (warp % 2) * 32;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kMmaRows;
  const int64_t tok0 = static_cast<int64_t>(blockIdx.y) * kMmaTokens;
  float acc[2][4][4];  // [row tile][token tile][accumulator element]
  #pragma unroll
  for (int i = 0; i < 2; ++i)
    #pragma unroll
    for (int j = 0; j < 4; ++j)
      #pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
  for (int64_t sub0 = 0; sub0 < n_sub; sub0 += kMmaSubs) {
    __syncthreads();  // the previous k-tile's reads are done
    mma_stage<T>(s, w, w_stride, n_rows, row0, xq, n_sub, n_tokens, tok0, sub0);
    __syncthreads();
    for (int sb = 0; sb < kMmaSubs; ++sb)
      #pragma unroll
      for (int i = 0; i < 2; ++i) {
        int c[2][4][4] = {};  // [half][token tile][element]
        #pragma unroll
        for (int h = 0; h < 2; ++h)
          #pragma unroll
          for (int j = 0; j < 4; ++j)
            mma_s8_k16(&s.w[wr + 16 * i][sb * 8 + 4 * h], &s.x[wt + 8 * j][sb * 8 + 4 * h], kMmaStride, lane,
                       c[h][j]);
        #pragma unroll
        for (int j = 0; j < 4; ++j)
          #pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int r = wr + 16 * i + g + 8 * (e >> 1), tk = wt + 8 * j + 2 * t + (e & 1);
            const float d8 = s.xd[tk][sb];
            if constexpr (Q8Unpack<T>::kHalves) {
              float v = 0.0f;
              #pragma unroll
              for (int h = 0; h < 2; ++h)
                v = fmaf(s.wa[r][sb * 2 + h], static_cast<float>(c[h][j][e]),
                         fmaf(s.wb[r][sb * 2 + h], s.xo[tk][sb * 2 + h], v));
              acc[i][j][e] += d8 * v;
            } else {
              const float v = s.wa[r][sb * 2] * d8 * static_cast<float>(c[0][j][e] + c[1][j][e]);
              acc[i][j][e] += fmaf(s.wb[r][sb * 2], s.xo[tk][sb * 2], v);
            }
          }
      }
  }
  #pragma unroll
  for (int i = 0; i < 2; ++i)
    #pragma unroll
    for (int j = 0; j < 4; ++j)
      #pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t r = row0 + wr + 16 * i + g + 8 * (e >> 1), tk = tok0 + wt + 8 * j + 2 * t + (e & 1);
        if (r < n_rows && tk < n_tokens) y[tk * y_stride + r] = acc[i][j][e];
      }
}

}  // namespace

}  // namespace ember::cuda
