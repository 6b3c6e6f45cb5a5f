// RoPE on the new keys and their KV-cache write in one kernel: launch_rope then
// launch_store_rows, without reading k back from memory in a second launch. One thread block
// per row (token): the block builds the row's cos/sin table and rotates the row in place
// with rope.cuh's own code, then, after a barrier (which makes the block's global writes
// visible to the block), stores the rotated row with store_rows.cuh's per-element code
// (a warp per quant block). The second read of the row hits L1. Same float operations on
// the same values, so the cache bytes and the rotated k equal the two launches' bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/kernels/device.cuh"
#include "cuda/kernels/rope.cuh"
#include "cuda/kernels/store_rows.cuh"

namespace ember::cuda {

namespace {

// Dynamic shared memory: rope_fill_cos_sin's n_rot floats. blockDim.x a multiple of 32 (and
// cols of whole 32-element blocks for the quant types), so the store loop is warp-uniform.
// k is read after it is written here: no __restrict__, no read-only loads.
__global__ void __launch_bounds__(kRopeMaxThreads)
    rope_store_rows_kernel(float* k, int64_t stride, int n_heads, int head_dim, const int32_t* __restrict__ pos,
                           RopeParams p, DType type,
                           uint8_t* __restrict__ dst, size_t dst_row_bytes, const int32_t* __restrict__ rows) {
  EMBER_DYNAMIC_SHARED(float, cos_sin);
  const int64_t row = blockIdx.x;
  float* kr = k + row * stride;
  rope_fill_cos_sin(cos_sin, pos[row], p);
  __syncthreads();
  rope_rotate_row(kr, n_heads, head_dim, p.n_rot, p.neox, cos_sin);
  __syncthreads();  // every pair rotated before any thread stores elements it did not rotate
  const int32_t dst_row = rows[row];
  if (dst_row < 0) return;  // skipped, as store_rows does
  uint8_t* d = dst + static_cast<int64_t>(dst_row) * dst_row_bytes;
  const int64_t cols = static_cast<int64_t>(n_heads) * head_dim;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) store_rows_element(type, kr[c], c, d);
}

}  // namespace

// launch_rope(k, head_dim, pos, p) then launch_store_rows(k, type, dst, dst_row_bytes, rows)
// in one launch: k is rotated in place and row r of it written as `type` (a KV type) to
// dst + rows[r] * dst_row_bytes (a negative row skipped); pos and rows are device
// arrays of k.rows entries.
inline void launch_rope_store_rows(F32Mat k, int head_dim, const int32_t* pos, const RopeParams& p, DType type,
                                   void* dst, size_t dst_row_bytes, const int32_t* rows, Stream s) {
  const char* op = "rope_store_rows";
  const int64_t n_heads = check_rope_args(k, head_dim, pos, p, op);
  MatView src = as_view(k);
  if (k.rows <= 1) src.row_stride = static_cast<size_t>(k.cols) * sizeof(float);  // a lone row's stride is moot
  check_store_rows_args(src, type, dst, dst_row_bytes, op);
  if (k.rows == 0 || k.cols == 0) return;
  if (dst == nullptr || rows == nullptr) fail(ErrorKind::InvalidArgument, "cuda {}: null pointer", op);
  EMBER_LAUNCH(rope_store_rows_kernel, static_cast<unsigned>(k.rows), rope_threads(k.cols),
               static_cast<size_t>(p.n_rot) * sizeof(float), s, k.data, k.stride, static_cast<int>(n_heads), head_dim,
               pos, p, type, static_cast<uint8_t*>(dst), dst_row_bytes,
               rows);
}

}  // namespace ember::cuda
