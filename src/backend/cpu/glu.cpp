// Gated linear units of the feed-forward block: out = act(gate) * up, with SiLU (llama, qwen),
// GELU-tanh (gemma) or gpt-oss's clamped SwiGLU. out may alias gate or up (elementwise, read
// before write).
#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/op_checks.h"
#include "backend/cpu/ops_reference.h"
#include "backend/cpu/row_kernels.h"
#include "util/error.h"
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
// ggml's swiglu_oai: x = min(gate, limit), y = clamp(up, -limit, limit),
// out = x / (1 + exp(-alpha x)) * (y + 1); NaN gates stay NaN (std::min keeps its first).
float swiglu_oai(float gate, float up, float alpha, float limit) {
  const double x = std::min(gate, limit);
  const double y = std::clamp(up, -limit, limit);
  return static_cast<float>(x / (1.0 + std::exp(-static_cast<double>(alpha) * x)) * (y + 1.0));
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

// Runs row_fn(gate row, up row, n, out row) over every row, on the pool when there is one.
template <class RowFn>
void glu(ThreadPool* pool, RowFn row_fn, const MatView& gate, const MatView& up, F32Mat out) {
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
void swiglu_oai(const MatView& gate, const MatView& up, F32Mat out, float alpha, float limit) {
  check_args(gate, up, out, "swiglu_oai");
  glu(nullptr, [=](const float* g, const float* u, int64_t n, float* o) {
    for (int64_t i = 0; i < n; ++i) o[i] = swiglu_oai(g[i], u[i], alpha, limit);
  }, gate, up, out);
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

void swiglu_oai(ThreadPool& pool, const MatView& gate, const MatView& up, F32Mat out, float alpha, float limit) {
  check_args(gate, up, out, "swiglu_oai");
  const bool simd = use_avx2();
  glu(&pool, [=](const float* g, const float* u, int64_t n, float* o) {
    if (simd) return avx2::swiglu_oai_row(g, u, n, alpha, limit, o);
    for (int64_t i = 0; i < n; ++i) o[i] = reference::swiglu_oai(g[i], u[i], alpha, limit);
  }, gate, up, out);
}

void glu(ThreadPool& pool, Activation act, const MatView& gate, const MatView& up, F32Mat out) {
  switch (act) {
    case Activation::SiLU: return swiglu(pool, gate, up, out);
    case Activation::GELU: return geglu(pool, gate, up, out);
    case Activation::SwiGLUOai: return swiglu_oai(pool, gate, up, out, kSwigluOaiAlpha, kSwigluOaiLimit);
  }
  fail(ErrorKind::InvalidArgument, "glu: unknown activation {}", static_cast<int>(act));
}

}  // namespace ember::ops
