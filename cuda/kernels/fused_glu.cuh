// The feed-forward's gate and up projections and their gated unit in one kernel:
// out = act(x Wg^T) * (x Wu^T), act an Activation (SiLU, GELU(tanh), gpt-oss's clamped
// SwiGLU). matmul.cuh's row kernel with two
// weight rows per warp: the warp walks row j of Wg and row j of Wu side by side against the
// same activations (quantised once to q8_1, or f32 for float weights), keeps both sets of
// token sums in registers, reduces them with the same shuffle tree, and writes only the
// product (elementwise.cuh's ew_glu). So the gate and up outputs never go to memory, x is
// quantised once, and each token's result is the unfused matmul, matmul, glu's bit for bit.
// Where the row kernel is not the matmul's own path (>= 64 tokens on quantised weights: the
// tensor-core tiles) or gate and up differ in type, the launcher runs the two matmuls on the
// once-quantised x and glu, the up projection going to the scratch.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/device.cuh"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/matmul.cuh"

namespace ember::cuda {

namespace {

// matmul_rows_kernel over two weights of one type and shape (Src's), NT tokens per pass.
template <class Src, int NT>
__global__ void __launch_bounds__(kMatmulWarps * kQ8Warp, 1)
    matmul_glu_rows_kernel(const uint8_t* __restrict__ wg, size_t wg_stride, const uint8_t* __restrict__ wu,
                           size_t wu_stride, int64_t n_rows, int64_t units, const typename Src::Act* __restrict__ x,
                           int64_t x_stride, int64_t n_tokens, Activation act, float* __restrict__ out,
                           int64_t out_stride) {
  const int lane = threadIdx.x % kQ8Warp;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kMatmulWarps + threadIdx.x / kQ8Warp;
  if (row >= n_rows) return;  // the whole warp
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * NT;
  const int n_tok = static_cast<int>(min(static_cast<int64_t>(NT), n_tokens - t0));
  const uint8_t* gr = wg + row * wg_stride;
  const uint8_t* ur = wu + row * wu_stride;
  const typename Src::Act* xt = x + t0 * x_stride;
  float gate[NT], up[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) gate[t] = up[t] = 0.0f;
  for (int64_t u = lane; u < units; u += kQ8Warp) Src::template step2<NT>(gr, ur, u, xt, x_stride, n_tok, gate, up);
  const float g = mm_warp_sums<NT>(gate, lane);
  const float v = mm_warp_sums<NT>(up, lane);
  const int t = mm_reduced_token<NT>(lane);
  if (lane % (kQ8Warp / NT) == 0 && t < n_tok) out[(t0 + t) * out_stride + row] = ew_glu(act, g, v);
}

template <class Src>
void launch_matmul_glu_rows(const MatView& wg, const MatView& wu, Activation act, const typename Src::Act* x,
                            int64_t x_stride, int64_t n_tokens, F32Mat out, Stream s) {
  mm_with_tokens_per_pass(n_tokens, [&](auto nt) {
    constexpr int NT = decltype(nt)::value;
    const dim3 grid(static_cast<unsigned>((wg.rows + kMatmulWarps - 1) / kMatmulWarps),
                    static_cast<unsigned>((n_tokens + NT - 1) / NT));
    EMBER_LAUNCH((matmul_glu_rows_kernel<Src, NT>), grid, kMatmulWarps * kQ8Warp, 0, s,
                 static_cast<const uint8_t*>(wg.data), wg.row_stride, static_cast<const uint8_t*>(wu.data),
                 wu.row_stride, wg.rows, wg.cols / Src::kUnit, x, x_stride, n_tokens, act, out.data, out.stride);
  });
}

// The fused kernel applies: one weight type, and the row kernel is what matmul would run.
inline bool matmul_glu_fuses(const MatView& wg, const MatView& wu, int64_t n_tokens) {
  return wg.type == wu.type && (matmul_float_type(wg.type) || n_tokens < kMmaMinTokens);
}

// The unfused path: gate into out, up into the scratch's f32 part, out = act(out) * up. xq:
// the quantised activations (unused for float weights).
inline void matmul_glu_unfused(const MatView& wg, const MatView& wu, Activation act, const MatView& x,
                               const block_q8_1* xq, F32Mat out, float* up_buf, Stream s) {
  const F32Mat up{up_buf, out.cols, out.rows, out.cols};
  auto project = [&](const MatView& w, F32Mat y) {
    if (matmul_float_type(w.type)) return launch_matmul_float(w, x, y, s);
    launch_matmul_q8(w, xq, x.rows, y, s);
  };
  project(wg, out);
  project(wu, up);
  launch_glu(act, as_view(out), as_view(up), out, s);
}

// The scratch's first part: x in q8_1 (whatever the weight types: one of two may be float).
inline size_t matmul_glu_q8_bytes(const MatView& w, int64_t n_tokens) {
  return static_cast<size_t>(n_tokens) * static_cast<size_t>(w.cols / kQ8Block) * sizeof(block_q8_1);
}

}  // namespace

// Scratch for launch_matmul_glu with weights shaped like w (gate and up are): room for the
// activations in q8_1 and for the up projection in f32, which the unfused path (>= 64
// tokens on quantised weights, or gate and up of different types) needs.
inline size_t matmul_glu_scratch_bytes(const MatView& w, int64_t n_tokens) {
  return matmul_glu_q8_bytes(w, n_tokens) + static_cast<size_t>(n_tokens) * static_cast<size_t>(w.rows) * sizeof(float);
}

// out = act(x Wg^T) * (x Wu^T) (elementwise.cuh's ew_glu): launch_matmul twice and
// launch_glu, with x quantised once and, below 64 tokens on one weight type (any count on
// float weights), in one kernel. x is f32, or Q8_1 packed rows (quantize_normed) for
// quantised weights; scratch holds matmul_glu_scratch_bytes(w_gate, x.rows), 4-byte aligned.
inline void launch_matmul_glu(const MatView& w_gate, const MatView& w_up, Activation act, const MatView& x, F32Mat out,
                              void* scratch, Stream s) {
  check_matmul_args(w_gate, x, out);
  check_matmul_args(w_up, x, out);
  if (x.rows == 0 || w_gate.rows == 0) return;
  const bool fused = matmul_glu_fuses(w_gate, w_up, x.rows);
  const bool float_x = x.type == DType::F32;
  const bool quantise = float_x && !(matmul_float_type(w_gate.type) && matmul_float_type(w_up.type));
  if ((quantise || !fused) && (scratch == nullptr || reinterpret_cast<uintptr_t>(scratch) % 4 != 0))
    fail(ErrorKind::InvalidArgument, "cuda matmul_glu: {}/{} weights need a 4-byte aligned scratch of {} bytes",
         dtype_name(w_gate.type), dtype_name(w_up.type), matmul_glu_scratch_bytes(w_gate, x.rows));
  // Gate and up have one shape, so one quantisation serves both.
  const block_q8_1* xq = static_cast<const block_q8_1*>(float_x ? scratch : x.data);
  if (quantise) launch_quantize_q8_1(x, static_cast<block_q8_1*>(scratch), s);
  if (!fused) {
    float* up = reinterpret_cast<float*>(static_cast<uint8_t*>(scratch) + matmul_glu_q8_bytes(w_gate, x.rows));
    return matmul_glu_unfused(w_gate, w_up, act, x, xq, out, up, s);
  }
  if (matmul_float_type(w_gate.type)) {
    const int64_t xs = static_cast<int64_t>(x.row_stride / sizeof(float));
    return mm_with_float_type(w_gate.type, [&](auto t) {
      launch_matmul_glu_rows<FloatRows<decltype(t)::value>>(w_gate, w_up, act, static_cast<const float*>(x.data), xs,
                                                            x.rows, out, s);
    });
  }
  mm_with_q8_type(w_gate.type, [&](auto t) {
    launch_matmul_glu_rows<Q8Rows<decltype(t)::value>>(w_gate, w_up, act, xq, w_gate.cols / kQ8Block, x.rows, out,
                                                        s);
  });
}

}  // namespace ember::cuda
