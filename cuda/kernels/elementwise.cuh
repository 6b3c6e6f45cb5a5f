// Elementwise f32 kernels over (possibly strided) rows: add (b may broadcast one row), add_id
// (b's row picked per row by an id), scale,
// softcap and the gated units (SiLU / GELU-tanh). One kernel template walks the matrix, a
// small functor per op does one element: a 2-D grid, columns across blockIdx.x (coalesced),
// rows across blockIdx.y, both grid-strided so any shape fits the grid limits.
// Every op reads an element before writing the same element from the same thread, so
// in-place use (out aliasing an input of the same layout) is safe.
// Also the launchers' shared argument checks (used by rms_norm.cuh and rope.cuh).
#pragma once
#include <climits>
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/device.cuh"
#include "cuda/kernel_api.h"
#include "util/error.h"

namespace ember::cuda {

namespace launch_check {

// An f32 MatView as the kernels take it: base pointer and row stride in floats.
struct F32Rows {
  const float* data;
  int64_t stride;
};

// The checks of the CPU ops (backend/cpu/op_checks.h) plus what the device needs: rows of
// whole, aligned floats. Only pointer values are inspected, never the data.
inline F32Rows f32_rows(const MatView& v, const char* op, const char* arg) {
  if (v.type != DType::F32 || v.layout != WeightLayout::Rows)
    fail(ErrorKind::InvalidArgument, "cuda {}: {} must be F32 rows, got {}", op, arg, dtype_name(v.type));
  if (v.rows < 0 || v.cols < 0) fail(ErrorKind::InvalidArgument, "cuda {}: {} is {}x{}", op, arg, v.rows, v.cols);
  if (v.rows > 0 && v.data == nullptr) fail(ErrorKind::InvalidArgument, "cuda {}: {} has no data", op, arg);
  if (reinterpret_cast<uintptr_t>(v.data) % sizeof(float) != 0)
    fail(ErrorKind::InvalidArgument, "cuda {}: {} is not float-aligned", op, arg);
  if (v.rows > 1 && (v.row_stride < static_cast<size_t>(v.cols) * sizeof(float) || v.row_stride % sizeof(float) != 0))
    fail(ErrorKind::InvalidArgument, "cuda {}: {} row stride {} bytes is not whole floats covering its {} columns", op,
         arg, v.row_stride, v.cols);
  const int64_t stride = v.rows > 1 ? static_cast<int64_t>(v.row_stride / sizeof(float)) : v.cols;
  return F32Rows{static_cast<const float*>(v.data), stride};
}

inline void f32_mat(const F32Mat& m, const char* op, const char* arg) {
  if (m.rows < 0 || m.cols < 0) fail(ErrorKind::InvalidArgument, "cuda {}: {} is {}x{}", op, arg, m.rows, m.cols);
  if (m.rows > 0 && m.data == nullptr) fail(ErrorKind::InvalidArgument, "cuda {}: {} has no data", op, arg);
  if (m.rows > 1 && m.stride < m.cols)
    fail(ErrorKind::InvalidArgument, "cuda {}: {} stride {} is below its {} columns", op, arg, m.stride, m.cols);
}

inline void shape(int64_t rows, int64_t cols, int64_t want_rows, int64_t want_cols, const char* op, const char* arg) {
  if (rows != want_rows || cols != want_cols)
    fail(ErrorKind::InvalidArgument, "cuda {}: {} is {}x{}, expected {}x{}", op, arg, rows, cols, want_rows, want_cols);
}

// Rows indexed by blockIdx.x (grid.x may reach 2^31 - 1).
inline void grid_rows(int64_t rows, const char* op) {
  if (rows > INT_MAX) fail(ErrorKind::InvalidArgument, "cuda {}: {} rows exceed one launch", op, rows);
}

}  // namespace launch_check

namespace {

constexpr int kWarp = 32;
constexpr int kEwThreads = 256;
constexpr unsigned kEwMaxGridY = 65535;  // CUDA's limit on gridDim.y

template <class Op>
__global__ void __launch_bounds__(kEwThreads) ew_rows_kernel(Op op, int64_t rows, int64_t cols) {
  const int64_t col_step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y)
    for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < cols; c += col_step) op(r, c);
}

struct EwAdd {  // a += b; b_stride 0 broadcasts b's one row
  float* a;
  int64_t a_stride;
  const float* b;
  int64_t b_stride;
  __device__ void operator()(int64_t r, int64_t c) const { a[r * a_stride + c] += b[r * b_stride + c]; }
};

struct EwAddId {  // a += b[ids[r]]; an id outside b's rows adds nothing (the host cannot check device ids)
  float* a;
  int64_t a_stride;
  const float* b;
  int64_t b_stride;
  int64_t b_rows;
  const int32_t* ids;
  __device__ void operator()(int64_t r, int64_t c) const {
    const int32_t id = ids[r];
    if (id >= 0 && id < b_rows) a[r * a_stride + c] += b[id * b_stride + c];
  }
};

struct EwScale {
  float* a;
  int64_t a_stride;
  float v;
  __device__ void operator()(int64_t r, int64_t c) const { a[r * a_stride + c] *= v; }
};

struct EwSoftcap {
  float* a;
  int64_t a_stride;
  float cap;
  __device__ void operator()(int64_t r, int64_t c) const {
    float& x = a[r * a_stride + c];
    x = cap * tanhf(x / cap);
  }
};

// ops::reference::silu / gelu_tanh in float: a few ulp from the double reference.
__device__ __forceinline__ float ew_silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float ew_gelu_tanh(float x) {
  const float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

// gpt-oss's clamped SwiGLU in ggml's float operations; the comparisons are std::min's and
// std::clamp's, so a NaN gate or up stays NaN as on the CPU (fminf would drop it).
__device__ __forceinline__ float ew_swiglu_oai(float gate, float up) {
  const float x = kSwigluOaiLimit < gate ? kSwigluOaiLimit : gate;
  const float y = up < -kSwigluOaiLimit ? -kSwigluOaiLimit : (kSwigluOaiLimit < up ? kSwigluOaiLimit : up);
  return x / (1.0f + expf(kSwigluOaiAlpha * -x)) * (y + 1.0f);
}

// act(gate) * up, the one gated-unit formula (fused_glu.cuh's epilogue uses it too).
__device__ __forceinline__ float ew_glu(Activation act, float gate, float up) {
  if (act == Activation::SwiGLUOai) return ew_swiglu_oai(gate, up);
  const float a = act == Activation::GELU ? ew_gelu_tanh(gate) : ew_silu(gate);
  return a * up;
}

template <Activation Act>
struct EwGlu {  // out = act(gate) * up; no __restrict__: out may alias gate or up
  const float* gate;
  int64_t gate_stride;
  const float* up;
  int64_t up_stride;
  float* out;
  int64_t out_stride;
  __device__ void operator()(int64_t r, int64_t c) const {
    out[r * out_stride + c] = ew_glu(Act, gate[r * gate_stride + c], up[r * up_stride + c]);
  }
};

// Launches op over rows x cols (nothing when empty).
template <class Op>
void ew_launch(const Op& op, int64_t rows, int64_t cols, Stream s) {
  if (rows <= 0 || cols <= 0) return;
  const int64_t col_blocks = (cols + kEwThreads - 1) / kEwThreads;
  const dim3 grid(static_cast<unsigned>(col_blocks < INT_MAX ? col_blocks : INT_MAX),
                  static_cast<unsigned>(rows < kEwMaxGridY ? rows : kEwMaxGridY));
  EMBER_LAUNCH(ew_rows_kernel<Op>, grid, kEwThreads, 0, s, op, rows, cols);
}

}  // namespace

inline void launch_add(F32Mat a, const MatView& b, Stream s) {
  launch_check::f32_mat(a, "add", "a");
  const launch_check::F32Rows bv = launch_check::f32_rows(b, "add", "b");
  if (b.cols != a.cols || (b.rows != 1 && b.rows != a.rows))
    fail(ErrorKind::InvalidArgument, "cuda add: b is {}x{}, expected {}x{} or 1x{}", b.rows, b.cols, a.rows, a.cols,
         a.cols);
  ew_launch(EwAdd{a.data, a.stride, bv.data, b.rows == 1 ? 0 : bv.stride}, a.rows, a.cols, s);
}

// ggml's add_id (ops::add_id): a[r] += b[ids[r]], ids in device memory (the experts' biases
// of a MoE projection, one row per expert in b).
inline void launch_add_id(F32Mat a, const MatView& b, const int32_t* ids, Stream s) {
  launch_check::f32_mat(a, "add_id", "a");
  const launch_check::F32Rows bv = launch_check::f32_rows(b, "add_id", "b");
  if (b.cols != a.cols)
    fail(ErrorKind::InvalidArgument, "cuda add_id: b has {} columns, a has {}", b.cols, a.cols);
  if (a.rows > 0 && ids == nullptr) fail(ErrorKind::InvalidArgument, "cuda add_id: no ids");
  ew_launch(EwAddId{a.data, a.stride, bv.data, bv.stride, b.rows, ids}, a.rows, a.cols, s);
}

inline void launch_scale(F32Mat a, float v, Stream s) {
  launch_check::f32_mat(a, "scale", "a");
  ew_launch(EwScale{a.data, a.stride, v}, a.rows, a.cols, s);
}

inline void launch_softcap(F32Mat a, float cap, Stream s) {
  launch_check::f32_mat(a, "softcap", "a");
  if (!(cap > 0.0f)) fail(ErrorKind::InvalidArgument, "cuda softcap: cap {} must be positive", cap);
  ew_launch(EwSoftcap{a.data, a.stride, cap}, a.rows, a.cols, s);
}

inline void launch_glu(Activation act, const MatView& gate, const MatView& up, F32Mat out, Stream s) {
  const char* op = act == Activation::GELU ? "geglu" : act == Activation::SwiGLUOai ? "swiglu_oai" : "swiglu";
  const launch_check::F32Rows g = launch_check::f32_rows(gate, op, "gate");
  const launch_check::F32Rows u = launch_check::f32_rows(up, op, "up");
  launch_check::f32_mat(out, op, "out");
  launch_check::shape(up.rows, up.cols, gate.rows, gate.cols, op, "up");
  launch_check::shape(out.rows, out.cols, gate.rows, gate.cols, op, "out");
  switch (act) {
    case Activation::SiLU:
      return ew_launch(EwGlu<Activation::SiLU>{g.data, g.stride, u.data, u.stride, out.data, out.stride}, gate.rows,
                       gate.cols, s);
    case Activation::GELU:
      return ew_launch(EwGlu<Activation::GELU>{g.data, g.stride, u.data, u.stride, out.data, out.stride}, gate.rows,
                       gate.cols, s);
    case Activation::SwiGLUOai:
      return ew_launch(EwGlu<Activation::SwiGLUOai>{g.data, g.stride, u.data, u.stride, out.data, out.stride},
                       gate.rows, gate.cols, s);
  }
  fail(ErrorKind::InvalidArgument, "cuda glu: unknown activation {}", static_cast<int>(act));
}

}  // namespace ember::cuda
