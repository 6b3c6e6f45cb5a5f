// The plain attention loop: for each query row and head, the scores against every slot of
// the ring (one row of scores, never a tile schedule), softmax, weighted sum of V. K and V
// are decoded once with the reference dequantizer; sums in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/attention_kernels.h"
#include "backend/cpu/ops_reference.h"
#include "tensor/quant.h"

namespace ember::ops::reference {

// torch, per head h with kv head g = h // (n_head / n_head_kv):
//   s = (q[:, h] @ k[:, g].T) * scale;  s = softcap * tanh(s / softcap) if softcap
//   s[~visible] = -inf;  out[:, h] = softmax(s, -1) @ v[:, g]    (all -inf row: zeros)
// With sinks: out[:, h] = softmax(cat(s, sinks[h]), -1)[:, :-1] @ v[:, g] (the sink's column
// has no value: it only adds e^(sinks[h] - max) to the denominator).
void attention(const MatView& q, const int32_t* q_pos, const KVView& kv, const AttentionParams& p, F32Mat out) {
  attn::check_args(q, q_pos, kv, p, out);
  const int d = p.head_dim;
  const int64_t row = static_cast<int64_t>(p.n_head_kv) * d;
  std::vector<float> k(static_cast<size_t>(kv.n_slots * row)), v(k.size());
  for (int64_t j = 0; j < kv.n_slots; ++j) {
    const int64_t r = kv.row_of(j);
    dequantize_row(kv.k_type, static_cast<const uint8_t*>(kv.k) + r * kv.k_row_bytes, k.data() + j * row, row);
    dequantize_row(kv.v_type, static_cast<const uint8_t*>(kv.v) + r * kv.v_row_bytes, v.data() + j * row, row);
  }
  const int group = p.n_head / p.n_head_kv;
  std::vector<double> s(static_cast<size_t>(kv.n_slots));
  std::vector<double> o(static_cast<size_t>(d));
  for (int64_t t = 0; t < q.rows; ++t) {
    const float* qrow = reinterpret_cast<const float*>(q.row(t));
    for (int h = 0; h < p.n_head; ++h) {
      const int g = h / group;
      double max = -INFINITY;
      for (int64_t j = 0; j < kv.n_slots; ++j) {
        s[j] = -INFINITY;
        if (!attn::key_visible(q_pos[t], kv.slot_pos[kv.row_of(j)], p.window)) continue;
        double dot = 0.0;
        for (int i = 0; i < d; ++i) dot += static_cast<double>(qrow[h * d + i]) * k[j * row + g * d + i];
        s[j] = dot * p.scale;
        if (p.softcap > 0.0f) s[j] = p.softcap * std::tanh(s[j] / p.softcap);
        max = std::fmax(max, s[j]);
      }
      std::fill(o.begin(), o.end(), 0.0);
      double sum = 0.0;
      if (p.sinks && max > -INFINITY) {
        max = std::fmax(max, static_cast<double>(p.sinks[h]));
        sum = std::exp(p.sinks[h] - max);
      }
      for (int64_t j = 0; j < kv.n_slots && max > -INFINITY; ++j) {
        if (s[j] == -INFINITY) continue;
        const double w = std::exp(s[j] - max);
        sum += w;
        for (int i = 0; i < d; ++i) o[i] += w * v[j * row + g * d + i];
      }
      float* dst = out.row(t) + h * d;
      for (int i = 0; i < d; ++i) dst[i] = sum > 0.0 ? static_cast<float>(o[i] / sum) : 0.0f;
    }
  }
}

}  // namespace ember::ops::reference
