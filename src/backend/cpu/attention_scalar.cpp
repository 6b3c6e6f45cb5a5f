// Scalar tile kernels of the tiled attention: the fallback when the CPU has no AVX2.
#include <cmath>

#include "backend/cpu/attention_kernels.h"
#include "tensor/quant.h"

namespace ember::attn {
namespace {

void to_f32(DType type, const void* src, float* dst, int64_t n) { dequantize_row(type, src, dst, n); }

void scores(const float* q, int m, const float* const* k, int nk, int d, float* s, int s_stride) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < nk; ++j) {
      float dot = 0.0f;
      for (int x = 0; x < d; ++x) dot += q[i * d + x] * k[j][x];
      s[i * s_stride + j] = dot;
    }
}

void accumulate(const float* p, int p_stride, int m, const float* const* v, int nv, int d, float* acc) {
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < nv; ++j) {
      const float w = p[i * p_stride + j];
      if (w == 0.0f) continue;
      for (int x = 0; x < d; ++x) acc[i * d + x] += w * v[j][x];
    }
}

float exp_sum(float* x, int n, float max) {
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) {
    x[j] = std::exp(x[j] - max);
    sum += x[j];
  }
  return sum;
}

void softcap(float* x, int n, float cap) {
  for (int j = 0; j < n; ++j) x[j] = cap * std::tanh(x[j] / cap);
}

}  // namespace

const Kernels& scalar_kernels() {
  static const Kernels k{to_f32, scores, accumulate, exp_sum, softcap};
  return k;
}

}  // namespace ember::attn
