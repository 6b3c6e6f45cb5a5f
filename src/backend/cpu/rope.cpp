// Rotary position embedding, in place on rows of n_heads * head_dim.
//   theta_i = pos * freq_scale * freq_base^(-2i / n_rot),  i < n_rot / 2
//   adjacent pairs (llama / GGUF "norm" rope): (x[2i], x[2i+1]) rotated by theta_i
//   half-split (neox: qwen2, gemma ...):      (x[i], x[i + n_rot/2]) rotated by theta_i
// with the variants of RopeParams: frequency factors (Llama 3, LongRoPE) divide theta_i,
// YaRN mixes scaled and unscaled angles per pair, mscale multiplies cos and sin.
// Dimensions n_rot .. head_dim pass through (partial rotary). Positions may be negative:
// rotations compose, which the KV cache's context shift relies on (it shifts with mscale 1).
// Angles are formed in double: at position 32k an f32 angle is already off by ~1e-3 rad.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/op_checks.h"
#include "backend/rope_angle.h"
#include "backend/cpu/ops_reference.h"
#include "util/thread_pool.h"

namespace ember::ops {
namespace {

void check_args(const F32Mat& x, int head_dim, const int32_t* pos, const RopeParams& p) {
  detail::require_valid(x, "rope", "x");
  if (head_dim <= 0 || x.cols % head_dim != 0)
    fail(ErrorKind::InvalidArgument, "rope: row of {} is not a whole number of heads of {}", x.cols, head_dim);
  if (p.n_rot < 0 || p.n_rot > head_dim || p.n_rot % 2 != 0)
    fail(ErrorKind::InvalidArgument, "rope: n_rot {} must be even and within head_dim {}", p.n_rot, head_dim);
  if (!(p.freq_base > 0.0f)) fail(ErrorKind::InvalidArgument, "rope: freq_base {} must be positive", p.freq_base);
  if (x.rows > 0 && pos == nullptr) fail(ErrorKind::InvalidArgument, "rope: positions missing");
}

// Element offsets of the i-th rotated pair within a head.
inline int pair_first(const RopeParams& p, int i) { return p.neox ? i : 2 * i; }
inline int pair_second(const RopeParams& p, int i) { return p.neox ? i + p.n_rot / 2 : 2 * i + 1; }

// torch: (a, b) = (a cos - b sin, a sin + b cos)
inline void rotate(float* head, const RopeParams& p, int i, float c, float s) {
  float& a = head[pair_first(p, i)];
  float& b = head[pair_second(p, i)];
  const float a0 = a, b0 = b;
  a = a0 * c - b0 * s;
  b = a0 * s + b0 * c;
}

}  // namespace

namespace reference {
// ggml's rope_yarn, written out: theta_extrap = pos * base^(-2i/n_rot) / factor_i;
// theta_interp = freq_scale * theta_extrap; YaRN mixes them by the ramp; cos and sin are
// scaled by mscale.
void rope(F32Mat x, int head_dim, const int32_t* pos, const RopeParams& p) {
  check_args(x, head_dim, pos, p);
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t h = 0; h < x.cols / head_dim; ++h)
      for (int i = 0; i < p.n_rot / 2; ++i) {
        const double factor = p.freq_factors ? p.freq_factors[i] : 1.0;
        const double extrap = static_cast<double>(pos[r]) * std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_rot);
        double theta = static_cast<double>(pos[r]) * p.freq_scale * std::pow(static_cast<double>(p.freq_base), -2.0 * i / p.n_rot);
        if (p.ext_factor != 0.0f) {
          // ggml's rope_yarn_ramp, in float as there
          const float y = (static_cast<float>(i) - p.corr_low) / std::max(0.001f, p.corr_high - p.corr_low);
          const float ramp = (1.0f - std::clamp(y, 0.0f, 1.0f)) * p.ext_factor;
          theta = theta * (1.0 - ramp) + extrap * ramp;
        }
        theta /= factor;
        rotate(x.row(r) + h * head_dim, p, i, static_cast<float>(std::cos(theta)) * p.mscale,
               static_cast<float>(std::sin(theta)) * p.mscale);
      }
}
}  // namespace reference

namespace {

bool same_angles(const RopeParams& a, const RopeParams& b) {
  return a.n_rot == b.n_rot && a.freq_base == b.freq_base && a.freq_scale == b.freq_scale &&
         a.freq_factors == b.freq_factors && a.ext_factor == b.ext_factor && a.corr_low == b.corr_low &&
         a.corr_high == b.corr_high && a.mscale == b.mscale;
}

// The angles' cos/sin for one position, kept for the next call: a decode step rotates q and
// k of every layer at the same position, mostly with the same parameters (factors compared by address: weights do not change), so one table in
// 2 * n_layer calls is computed (pow and sincos in double: a few microseconds each time).
// Per thread, as the pool's threads each rotate their own rows.
struct AngleTable {
  int32_t pos = 0;
  RopeParams params;
  bool valid = false;
  std::vector<float> cos_t, sin_t;

  void fill(int32_t at, const RopeParams& p) {
    const int half = p.n_rot / 2;
    if (valid && pos == at && same_angles(params, p)) return;
    cos_t.resize(half);
    sin_t.resize(half);
    for (int i = 0; i < half; ++i) {
      const double theta = rope_angle(p, i, at, p.freq_factors ? p.freq_factors[i] : 1.0f);
      cos_t[i] = static_cast<float>(std::cos(theta)) * p.mscale;
      sin_t[i] = static_cast<float>(std::sin(theta)) * p.mscale;
    }
    pos = at;
    params = p;
    valid = true;
  }
};

}  // namespace

void rope(ThreadPool& pool, F32Mat x, int head_dim, const int32_t* pos, const RopeParams& p) {
  check_args(x, head_dim, pos, p);
  const int half = p.n_rot / 2;
  if (half == 0) return;
  const int64_t n_heads = x.cols / head_dim;
  pool.parallel_for(x.rows, detail::row_grain(x.cols), [&](int64_t begin, int64_t end) {
    thread_local AngleTable angles;
    for (int64_t r = begin; r < end; ++r) {
      angles.fill(pos[r], p);  // cos/sin are shared by every head of a row
      for (int64_t h = 0; h < n_heads; ++h) {
        float* head = x.row(r) + h * head_dim;
        for (int i = 0; i < half; ++i) rotate(head, p, i, angles.cos_t[i], angles.sin_t[i]);
      }
    }
  });
}

}  // namespace ember::ops
