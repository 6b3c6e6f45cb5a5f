// Gated linear units of the feed-forward block: out = act(gate) * up, with SiLU (llama, qwen)
// or GELU-tanh (gemma). out may alias gate or up (elementwise, read before write).
#include <cmath>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/op_checks.h"
#include "backend/cpu/ops_reference.h"
#include "backend/cpu/row_kernels.h"
#include "util/thread_pool.h"

namespace ember::ops {

namespace reference {
// torch: F.silu(x)
float silu(float x) { return static_cast<float>(x / (1.0 + std::exp(-static_cast<double>(x)))); }
// torch: F.gelu(x, approximate="tanh")
float gelu_tanh(float x) {
  const double kSqrt2OverPi = 0.7978845608028654;
  const double xd = x;
  return static_cast<float>(0.5 * xd * (1.0 + std::tanh(kSqrt2OverPi * (xd + 0.044715 * xd * xd * xd))));
}
}  // namespace reference

namespace {

using GluRowFn = void (*)(const float*, const float*, int64_t, float*);

// torch: out = F.silu(gate) * up
void swiglu_row_reference(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = reference::silu(gate[i]) * up[i];
}
// torch: out = F.gelu(gate, approximate="tanh") * up
void geglu_row_reference(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = reference::gelu_tanh(gate[i]) * up[i];
}

void check_args(const MatView& gate, const MatView& up, const F32Mat& out, const char* op) {
  detail::require_f32(gate, op, "gate");
  detail::require_f32(up, op, "up");
  detail::require_valid(out, op, "out");
  detail::require_shape(up.rows, up.cols, gate.rows, gate.cols, op, "up");
  detail::require_shape(out.rows, out.cols, gate.rows, gate.cols, op, "out");
}

void glu(ThreadPool* pool, GluRowFn row_fn, const MatView& gate, const MatView& up, F32Mat out) {
  auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) row_fn(detail::f32_row(gate, r), detail::f32_row(up, r), gate.cols, out.row(r));
  };
  if (pool)
    pool->parallel_for(gate.rows, detail::row_grain(gate.cols), rows);
  else
    rows(0, gate.rows);
}

bool use_avx2() { return simd_level() >= SimdLevel::AVX2; }

}  // namespace

namespace reference {
void swiglu(const MatView& gate, const MatView& up, F32Mat out) {
  check_args(gate, up, out, "swiglu");
  glu(nullptr, swiglu_row_reference, gate, up, out);
}
void geglu(const MatView& gate, const MatView& up, F32Mat out) {
  check_args(gate, up, out, "geglu");
  glu(nullptr, geglu_row_reference, gate, up, out);
}
}  // namespace reference

void swiglu(ThreadPool& pool, const MatView& gate, const MatView& up, F32Mat out) {
  check_args(gate, up, out, "swiglu");
  glu(&pool, use_avx2() ? avx2::swiglu_row : swiglu_row_reference, gate, up, out);
}

void geglu(ThreadPool& pool, const MatView& gate, const MatView& up, F32Mat out) {
  check_args(gate, up, out, "geglu");
  glu(&pool, use_avx2() ? avx2::geglu_row : geglu_row_reference, gate, up, out);
}

}  // namespace ember::ops
