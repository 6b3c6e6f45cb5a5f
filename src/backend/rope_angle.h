// The angle and magnitude of one rotated pair, shared by the CPU's fast RoPE
// (backend/cpu/rope.cpp) and the CUDA kernels (cuda/kernels/rope.cuh), so both rotate by the
// same bits; ops::reference::rope spells the same formula out on its own, as the oracle.
//
//   theta_i = pos * s_i * base^(-2i / n_rot) / f_i          (i < n_rot / 2)
//   s_i     = freq_scale                                    (no YaRN: linear scaling, or 1)
//           = freq_scale * (1 - r_i) + r_i                  (YaRN, r_i = RopeParams' ramp)
//   f_i     = freq_factors[i], or 1                         (Llama 3 rope_freqs, LongRoPE)
// and (cos, sin) are multiplied by mscale. Formed in double: at position 32k an f32 angle is
// already off by ~1e-3 rad. Without variants this is exactly the plain RoPE's expression.
#pragma once
#include <cmath>
#include <cstdint>

#include "backend/ops.h"
#include "tensor/dtype.h"  // EMBER_HD

namespace ember {

// s_i above: how much of the scaled angle pair i takes.
EMBER_HD inline double rope_pair_scale(const RopeParams& p, int i) {
  if (p.ext_factor == 0.0f) return p.freq_scale;
  // ggml's rope_yarn_ramp in float: 1 below corr_low, 0 above corr_high.
  const float y = (static_cast<float>(i) - p.corr_low) / fmaxf(0.001f, p.corr_high - p.corr_low);
  const float ramp = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * p.ext_factor;
  return static_cast<double>(p.freq_scale) * (1.0 - ramp) + ramp;
}

// theta_i at position pos; `factor` is freq_factors[i] read by the caller from its memory.
EMBER_HD inline double rope_angle(const RopeParams& p, int i, int32_t pos, float factor) {
  const double theta = static_cast<double>(pos) * rope_pair_scale(p, i) *
                       ::pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_rot);
  return theta / factor;  // x / 1.0 is x: plain RoPE keeps its bits
}

}  // namespace ember
