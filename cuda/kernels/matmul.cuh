// matmul y = x W^T (ops::matmul) for every weight type, and its launchers.
//
// Quantised weights: the activations are quantised once per call to q8_1 blocks in the
// scratch (matmul_q8.cuh), then one warp per weight row walks the row's 32-element
// sub-blocks (lane l takes sub-blocks l, l + 32, ...: the warp reads the row contiguously,
// every byte once), unpacks each to int8 and dots it with up to kMaxTokensPerPass tokens'
// q8 blocks by __dp4a. The tokens' sums stay in registers, so a row is read once per pass of
// up to 32 tokens: decode (1 token) and small batches cost about one read of the weights.
// From 64 tokens on, quantised weights go through tensor-core tiles instead
// (matmul_mma.cuh). x may also come already quantised (a Q8_1 view of packed rows, e.g.
// from fused_norm_q8.cuh's quantize_normed), which skips the quantisation. Float weights
// (F32, F16, BF16) take the row kernel on f32 activations, no scratch, at any token count.
// Below 64 tokens a token's result is computed by the same operations in the same order
// whatever the other tokens, so it is bitwise independent of the batch; the tiles use the
// same exact integer sums and scales, summed in another order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "backend/ops.h"
#include "cuda/kernel_api.h"
#include "cuda/kernels/device.cuh"
#include "cuda/kernels/matmul_mma.cuh"
#include "cuda/kernels/matmul_q8.cuh"
#include "util/error.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace ember::cuda {

namespace {

constexpr int kMatmulWarps = 4;  // rows per thread block, one warp each
constexpr int kMaxTokensPerPass = 32;

// The warp's sums of acc[t] for NT (a power of two <= 32) tokens, the lanes' values halved
// per step: at lane bit m, a lane keeps half of its tokens and adds the partner's (lane ^ m)
// partial sums of them, so NT tokens take NT - 1 + log2(32 / NT) shuffles instead of 5 NT.
// Each token's sum is the same tree of pairs (l, l ^ m) as a plain butterfly, so it is
// bitwise the same whatever NT. Returns the sum of token mm_reduced_token<NT>(lane), which
// lanes with lane % (32 / NT) == 0 write.
template <int NT>
__device__ __forceinline__ float mm_warp_sums(float (&acc)[NT], int lane) {
  int m = kQ8Warp / 2;
  for (int h = NT / 2; h >= 1; h /= 2, m /= 2) {
    const bool upper = (lane & m) != 0;
    for (int i = 0; i < h; ++i) {
      const float send = upper ? acc[i] : acc[i + h];
      const float keep = upper ? acc[i + h] : acc[i];
      acc[i] = keep + __shfl_xor_sync(0xffffffffu, send, m);
    }
  }
  float v = acc[0];
  for (; m >= 1; m /= 2) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}

// The token whose sum mm_warp_sums leaves in `lane`: bit m of the lane (m = 16, 8, ...)
// chose the upper half of the tokens left at that step.
template <int NT>
__device__ __forceinline__ int mm_reduced_token(int lane) {
  int t = 0, m = kQ8Warp / 2;
  for (int h = NT / 2; h >= 1; h /= 2, m /= 2)
    if (lane & m) t += h;
  return t;
}

// Source of the dot products: quantised weights against q8_1 activation blocks.
template <DType T>
struct Q8Rows {
  using Act = block_q8_1;
  static constexpr int kUnit = kQ8Block;  // elements per step of a lane
  template <int NT>
  __device__ static void step(const uint8_t* row, int64_t unit, const Act* x, int64_t x_stride, int n_tok,
                              float (&acc)[NT]) {
    Q8Sub w;
    Q8Unpack<T>::load(row, unit, w);
    for (int t = 0; t < NT; ++t)
      if (t < n_tok) acc[t] += q8_dot<T>(w, x[t * x_stride + unit]);
  }
  // step with token t's activations at row xr[t] of x (matmul_id.cuh), each sum as step forms it.
  template <int NT>
  __device__ __forceinline__ static void step_gather(const uint8_t* row, int64_t unit, const Act* x,
                                                     int64_t x_stride, const int32_t (&xr)[NT], int n_tok,
                                                     float (&acc)[NT]) {
    Q8Sub w;
    Q8Unpack<T>::load(row, unit, w);
#pragma unroll
    for (int t = 0; t < NT; ++t)
      if (t < n_tok) acc[t] += q8_dot<T>(w, x[static_cast<int64_t>(xr[t]) * x_stride + unit]);
  }
  // step on two rows against the same activations (fused_glu.cuh), each sum as step forms it.
  template <int NT>
  __device__ static void step2(const uint8_t* row_a, const uint8_t* row_b, int64_t unit, const Act* x,
                               int64_t x_stride, int n_tok, float (&acc_a)[NT], float (&acc_b)[NT]) {
    Q8Sub a, b;
    Q8Unpack<T>::load(row_a, unit, a);
    Q8Unpack<T>::load(row_b, unit, b);
#pragma unroll
    for (int t = 0; t < NT; ++t)
      if (t < n_tok) {
        const Act& xb = x[t * x_stride + unit];
        acc_a[t] += q8_dot<T>(a, xb);
        acc_b[t] += q8_dot<T>(b, xb);
      }
  }
};

template <DType T>
__device__ __forceinline__ float mm_float_element(const uint8_t* row, int64_t i) {
  if constexpr (T == DType::F32) return reinterpret_cast<const float*>(row)[i];
  if constexpr (T == DType::F16) return __half2float(reinterpret_cast<const __half*>(row)[i]);
  if constexpr (T == DType::BF16) return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(row)[i]);
  return 0.0f;
}

// Source of the dot products: float weights, one element per lane and step, f32 activations.
template <DType T>
struct FloatRows {
  using Act = float;
  static constexpr int kUnit = 1;
  template <int NT>
  __device__ static void step(const uint8_t* row, int64_t unit, const Act* x, int64_t x_stride, int n_tok,
                              float (&acc)[NT]) {
    const float w = mm_float_element<T>(row, unit);
    for (int t = 0; t < NT; ++t)
      if (t < n_tok) acc[t] = fmaf(w, x[t * x_stride + unit], acc[t]);
  }
  template <int NT>
  __device__ __forceinline__ static void step_gather(const uint8_t* row, int64_t unit, const Act* x,
                                                     int64_t x_stride, const int32_t (&xr)[NT], int n_tok,
                                                     float (&acc)[NT]) {
    const float w = mm_float_element<T>(row, unit);
#pragma unroll
    for (int t = 0; t < NT; ++t)
      if (t < n_tok) acc[t] = fmaf(w, x[static_cast<int64_t>(xr[t]) * x_stride + unit], acc[t]);
  }
  template <int NT>
  __device__ static void step2(const uint8_t* row_a, const uint8_t* row_b, int64_t unit, const Act* x,
                               int64_t x_stride, int n_tok, float (&acc_a)[NT], float (&acc_b)[NT]) {
    const float a = mm_float_element<T>(row_a, unit), b = mm_float_element<T>(row_b, unit);
#pragma unroll
    for (int t = 0; t < NT; ++t)
      if (t < n_tok) {
        const float xv = x[t * x_stride + unit];
        acc_a[t] = fmaf(a, xv, acc_a[t]);
        acc_b[t] = fmaf(b, xv, acc_b[t]);
      }
  }
};

// One warp per weight row, NT tokens from blockIdx.y * NT. x: the tokens' activations
// (x_stride Acts apart), units = the row's steps (sub-blocks or elements).
template <class Src, int NT>
__global__ void __launch_bounds__(kMatmulWarps * kQ8Warp)
    matmul_rows_kernel(const uint8_t* __restrict__ w, size_t w_stride, int64_t n_rows, int64_t units,
                       const typename Src::Act* __restrict__ x, int64_t x_stride, int64_t n_tokens,
                       float* __restrict__ y, int64_t y_stride) {
  const int lane = threadIdx.x % kQ8Warp;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kMatmulWarps + threadIdx.x / kQ8Warp;
  if (row >= n_rows) return;  // the whole warp: no block-wide barrier below
  const int64_t t0 = static_cast<int64_t>(blockIdx.y) * NT;
  const int n_tok = static_cast<int>(min(static_cast<int64_t>(NT), n_tokens - t0));
  const uint8_t* wr = w + row * w_stride;
  const typename Src::Act* xt = x + t0 * x_stride;
  float acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
  for (int64_t u = lane; u < units; u += kQ8Warp) Src::template step<NT>(wr, u, xt, x_stride, n_tok, acc);
  const float sum = mm_warp_sums<NT>(acc, lane);
  const int t = mm_reduced_token<NT>(lane);
  if (lane % (kQ8Warp / NT) == 0 && t < n_tok) y[(t0 + t) * y_stride + row] = sum;
}

template <class Src, int NT>
void launch_matmul_rows(const MatView& w, const typename Src::Act* x, int64_t x_stride, int64_t n_tokens, F32Mat y,
                        Stream s) {
  const dim3 grid(static_cast<unsigned>((w.rows + kMatmulWarps - 1) / kMatmulWarps),
                  static_cast<unsigned>((n_tokens + NT - 1) / NT));
  EMBER_LAUNCH((matmul_rows_kernel<Src, NT>), grid, kMatmulWarps * kQ8Warp, 0, s,
               static_cast<const uint8_t*>(w.data), w.row_stride, w.rows, w.cols / Src::kUnit, x, x_stride,
               n_tokens, y.data, y.stride);
}

// f(std::integral_constant<int, NT>) for the tokens per pass: the smallest power of two
// that covers n_tokens, at most 32.
template <class F>
void mm_with_tokens_per_pass(int64_t n_tokens, F&& f) {
  if (n_tokens == 1) return f(std::integral_constant<int, 1>{});
  if (n_tokens == 2) return f(std::integral_constant<int, 2>{});
  if (n_tokens <= 4) return f(std::integral_constant<int, 4>{});
  if (n_tokens <= 8) return f(std::integral_constant<int, 8>{});
  if (n_tokens <= 16) return f(std::integral_constant<int, 16>{});
  f(std::integral_constant<int, kMaxTokensPerPass>{});
}

template <class Src>
void launch_matmul_rows_any(const MatView& w, const typename Src::Act* x, int64_t x_stride, int64_t n_tokens,
                            F32Mat y, Stream s) {
  mm_with_tokens_per_pass(n_tokens, [&](auto nt) { launch_matmul_rows<Src, decltype(nt)::value>(w, x, x_stride, n_tokens, y, s); });
}

inline bool matmul_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

inline bool matmul_q8_type(DType t) {
  switch (t) {
    case DType::Q4_0: case DType::Q4_1: case DType::Q5_0: case DType::Q5_1: case DType::Q8_0:
    case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: case DType::MXFP4:
      return true;
    default:
      return false;
  }
}

// From this many tokens on, quantised weights go through the tensor-core tiles.
constexpr int64_t kMmaMinTokens = 64;

template <DType T>
void launch_matmul_mma(const MatView& w, const block_q8_1* xq, int64_t n_tokens, F32Mat y, Stream s) {
  const dim3 grid(static_cast<unsigned>((w.rows + kMmaRows - 1) / kMmaRows),
                  static_cast<unsigned>((n_tokens + kMmaTokens - 1) / kMmaTokens));
  EMBER_LAUNCH(matmul_q8_mma_kernel<T>, grid, kMmaThreads, 0, s, static_cast<const uint8_t*>(w.data), w.row_stride,
               w.rows, w.cols / kQ8Block, xq, n_tokens, y.data, y.stride);
}

template <DType T>
void launch_matmul_q8_typed(const MatView& w, const block_q8_1* xq, int64_t n_tokens, F32Mat y, Stream s) {
  if (n_tokens >= kMmaMinTokens) return launch_matmul_mma<T>(w, xq, n_tokens, y, s);
  launch_matmul_rows_any<Q8Rows<T>>(w, xq, w.cols / kQ8Block, n_tokens, y, s);
}

template <DType T>
using MmType = std::integral_constant<DType, T>;

// f(MmType<type>) for a quantised weight type with a q8 path.
template <class F>
void mm_with_q8_type(DType type, F&& f) {
  switch (type) {
    case DType::Q4_0: return f(MmType<DType::Q4_0>{});
    case DType::Q4_1: return f(MmType<DType::Q4_1>{});
    case DType::Q5_0: return f(MmType<DType::Q5_0>{});
    case DType::Q5_1: return f(MmType<DType::Q5_1>{});
    case DType::Q8_0: return f(MmType<DType::Q8_0>{});
    case DType::Q2_K: return f(MmType<DType::Q2_K>{});
    case DType::Q3_K: return f(MmType<DType::Q3_K>{});
    case DType::Q4_K: return f(MmType<DType::Q4_K>{});
    case DType::Q5_K: return f(MmType<DType::Q5_K>{});
    case DType::Q6_K: return f(MmType<DType::Q6_K>{});
    case DType::MXFP4: return f(MmType<DType::MXFP4>{});
    default: fail(ErrorKind::InvalidArgument, "cuda matmul: no q8 path for {}", dtype_name(type));
  }
}

// f(MmType<type>) for a float weight type.
template <class F>
void mm_with_float_type(DType type, F&& f) {
  switch (type) {
    case DType::F32: return f(MmType<DType::F32>{});
    case DType::F16: return f(MmType<DType::F16>{});
    case DType::BF16: return f(MmType<DType::BF16>{});
    default: fail(ErrorKind::InvalidArgument, "cuda matmul: {} is not a float type", dtype_name(type));
  }
}

inline void launch_matmul_q8(const MatView& w, const block_q8_1* xq, int64_t n_tokens, F32Mat y, Stream s) {
  mm_with_q8_type(w.type, [&](auto t) { launch_matmul_q8_typed<decltype(t)::value>(w, xq, n_tokens, y, s); });
}

inline void launch_matmul_float(const MatView& w, const MatView& x, F32Mat y, Stream s) {
  const float* xp = static_cast<const float*>(x.data);
  const int64_t xs = static_cast<int64_t>(x.row_stride / sizeof(float));
  mm_with_float_type(w.type, [&](auto t) {
    launch_matmul_rows_any<FloatRows<decltype(t)::value>>(w, xp, xs, x.rows, y, s);
  });
}

inline void launch_quantize_q8_1(const MatView& x, block_q8_1* out, Stream s) {
  constexpr int kThreads = 256;
  const int64_t n_blocks = x.cols / kQ8Block;
  const dim3 grid(static_cast<unsigned>((n_blocks * kQ8ThreadsPerBlock + kThreads - 1) / kThreads),
                  static_cast<unsigned>(x.rows));
  EMBER_LAUNCH(quantize_q8_1_kernel, grid, kThreads, 0, s, static_cast<const float*>(x.data),
               static_cast<int64_t>(x.row_stride / sizeof(float)), n_blocks, out);
}

// The shapes, types, strides and alignments the kernels rely on (no data is read here).
inline void check_matmul_args(const MatView& w, const MatView& x, const F32Mat& y) {
  if (!matmul_float_type(w.type) && !matmul_q8_type(w.type))
    fail(ErrorKind::InvalidArgument, "cuda matmul: weight type {} is not supported", dtype_name(w.type));
  if (w.layout != WeightLayout::Rows) fail(ErrorKind::InvalidArgument, "cuda matmul: weights must be in the Rows layout");
  if (x.type != DType::F32 && !(x.type == DType::Q8_1 && matmul_q8_type(w.type)))
    fail(ErrorKind::InvalidArgument, "cuda matmul: activations must be F32 (or Q8_1 for quantised weights), not {}",
         dtype_name(x.type));
  if (x.cols != w.cols || y.rows != x.rows || y.cols != w.rows)
    fail(ErrorKind::InvalidArgument, "cuda matmul: x {}x{} times W^T {}x{} does not give y {}x{}", x.rows, x.cols,
         w.cols, w.rows, y.rows, y.cols);
  const int block = dtype_size(w.type).block_size;
  if (w.cols % block != 0)
    fail(ErrorKind::InvalidArgument, "cuda matmul: {} columns are not whole {} blocks", w.cols, dtype_name(w.type));
  // quant blocks: 2-byte loads (MXFP4: bytes only)
  const size_t elem_align = w.type == DType::F32 ? 4 : w.type == DType::MXFP4 ? 1 : 2;
  if (w.row_stride < dtype_row_bytes(w.type, w.cols) || w.row_stride % elem_align != 0 ||
      reinterpret_cast<uintptr_t>(w.data) % elem_align != 0)
    fail(ErrorKind::InvalidArgument, "cuda matmul: weight rows {} bytes apart are too close or misaligned", w.row_stride);
  // f32 rows of aligned floats; q8_1 rows packed (the kernels index blocks token * n_sub + sub).
  const bool rows_ok = x.type == DType::F32 ? x.row_stride >= static_cast<size_t>(x.cols) * sizeof(float) &&
                                                  x.row_stride % sizeof(float) == 0
                                            : x.row_stride == dtype_row_bytes(DType::Q8_1, x.cols);
  if (!rows_ok || reinterpret_cast<uintptr_t>(x.data) % 4 != 0)
    fail(ErrorKind::InvalidArgument, "cuda matmul: {} activation rows {} bytes apart are too close or misaligned",
         dtype_name(x.type), x.row_stride);
  if (y.rows > 1 && y.stride < y.cols) fail(ErrorKind::InvalidArgument, "cuda matmul: output rows overlap");
  if (x.rows > 65535 * static_cast<int64_t>(kMaxTokensPerPass))
    fail(ErrorKind::InvalidArgument, "cuda matmul: {} tokens in one call are too many", x.rows);
}

// Scratch for the activations quantised to q8_1 (none for float weights; unused when x is
// already Q8_1).
inline size_t matmul_scratch_bytes(const MatView& w, int64_t n_tokens) {
  if (matmul_float_type(w.type)) return 0;
  return static_cast<size_t>(n_tokens) * static_cast<size_t>(w.cols / kQ8Block) * sizeof(block_q8_1);
}

inline void launch_matmul(const MatView& w, const MatView& x, F32Mat y, void* scratch, Stream s) {
  check_matmul_args(w, x, y);
  if (x.rows == 0 || w.rows == 0) return;
  if (matmul_float_type(w.type)) return launch_matmul_float(w, x, y, s);
  if (x.type == DType::Q8_1) return launch_matmul_q8(w, static_cast<const block_q8_1*>(x.data), x.rows, y, s);
  if (scratch == nullptr || reinterpret_cast<uintptr_t>(scratch) % 4 != 0)
    fail(ErrorKind::InvalidArgument, "cuda matmul: {} weights need a 4-byte aligned scratch of {} bytes",
         dtype_name(w.type), matmul_scratch_bytes(w, x.rows));
  block_q8_1* xq = static_cast<block_q8_1*>(scratch);
  launch_quantize_q8_1(x, xq, s);
  launch_matmul_q8(w, xq, x.rows, y, s);
}

}  // namespace

}  // namespace ember::cuda
