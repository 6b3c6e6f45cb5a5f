// Scalar tile kernels of the tiled attention: the fallback when the CPU has no AVX2.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/attention_kernels.h"
#include "tensor/quant.h"

namespace ember::attn {
namespace {

void to_f32_rows(DType type, const uint8_t* src, size_t row_bytes, int n_rows, int parts, int64_t n, float* dst,
                 size_t part_stride) {
  for (int j = 0; j < n_rows; ++j)
    for (int p = 0; p < parts; ++p)
      dequantize_row(type, src + j * row_bytes + dtype_row_bytes(type, p * n), dst + p * part_stride + j * n, n);
}

void tile_rows(const TileRows& t) {
  const int d = t.d;
  float s[kKeyTile];
  for (int r = 0; r < t.n_rows; ++r) {
    const float* q = t.q + static_cast<size_t>(r) * d;
    float tile_max = -std::numeric_limits<float>::infinity();
    for (int j = 0; j < t.nk; ++j) {
      float dot = 0.0f;
      for (int x = 0; x < d; ++x) dot += q[x] * t.k[j][x];
      if (t.softcap > 0.0f) dot = t.softcap * std::tanh(dot / t.softcap);
      if (!t.all_visible && !key_visible(t.q_pos[r], t.k_pos[j], t.window))
        dot = -std::numeric_limits<float>::infinity();
      s[j] = dot;
      tile_max = std::max(tile_max, dot);
    }
    const float m_new = std::max(t.m[r], tile_max);
    if (m_new == -std::numeric_limits<float>::infinity()) continue;  // nothing visible yet
    const float correction = std::exp(t.m[r] - m_new);              // 0 on the first visible tile
    float* acc = t.acc + static_cast<size_t>(r) * d;
    for (int x = 0; x < d; ++x) acc[x] *= correction;
    float sum = 0.0f;
    for (int j = 0; j < t.nk; ++j) {
      const float p = std::exp(s[j] - m_new);
      sum += p;
      if (p != 0.0f)
        for (int x = 0; x < d; ++x) acc[x] += p * t.v[j][x];
    }
    t.l[r] = t.l[r] * correction + sum;
    t.m[r] = m_new;
  }
}

}  // namespace

const Kernels& scalar_kernels() {
  static const Kernels k{to_f32_rows, tile_rows, tile_rows, nullptr, nullptr};  // row by row either way
  return k;
}

}  // namespace ember::attn
