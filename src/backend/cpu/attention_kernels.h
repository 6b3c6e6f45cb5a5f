// Internals of the tiled attention (attention.cpp): the inner kernels it is built from, one
// set per SIMD level, and the shared rules (argument checks, key visibility) that the
// reference loop (attention_reference.cpp) uses too.
#pragma once
#include <cstdint>

#include "backend/ops.h"

namespace ember::attn {

// The tile primitives. Rows are f32 and head_dim (d) long; K and V tile rows come as
// pointers so f32 caches can be read in place while other types go through a buffer.
struct Kernels {
  // dst[0..n) = src decoded from `type` (f32, f16, q8_0, q4_0); n is a multiple of the
  // type's block size and src starts on a block boundary.
  void (*to_f32)(DType type, const void* src, float* dst, int64_t n);
  // s[i * s_stride + j] = dot(q + i * d, k[j]) for i < m, j < nk.
  void (*scores)(const float* q, int m, const float* const* k, int nk, int d, float* s, int s_stride);
  // acc[i * d ..] += sum_j p[i * p_stride + j] * v[j][..] for i < m.
  void (*accumulate)(const float* p, int p_stride, int m, const float* const* v, int nv, int d, float* acc);
  // x[j] = exp(x[j] - max) for j < n (exp(-inf) = 0); returns the sum. max is finite.
  float (*exp_sum)(float* x, int n, float max);
  // x[j] = cap * tanh(x[j] / cap)
  void (*softcap)(float* x, int n, float cap);
};

const Kernels& scalar_kernels();  // attention_scalar.cpp
const Kernels& avx2_kernels();    // attention_avx2.cpp: call only when the CPU has AVX2+FMA+F16C

// A key at position k_pos (-1: empty slot) is visible to a query at q_pos when it is not in
// the future and, with a sliding window, fewer than `window` positions back.
inline bool key_visible(int32_t q_pos, int32_t k_pos, int window) {
  return k_pos >= 0 && k_pos <= q_pos && (window <= 0 || q_pos - k_pos < window);
}

// Throws InvalidArgument naming the problem (types, shapes, strides, head counts).
void check_args(const MatView& q, const int32_t* q_pos, const KVView& kv, const AttentionParams& p,
                const F32Mat& out);

}  // namespace ember::attn
