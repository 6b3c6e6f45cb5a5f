// store_rows: row r of an f32 matrix written as a KV type (backend/kv_types.h) at dst + rows[r] *
// dst_row_bytes (the KV cache write), the same bytes as ops::store_row, i.e.
// quantize_row_reference (src/tensor/quant_legacy.cpp): same scale choice, same f32
// operations unfused, same rounding, so the GPU's cache holds exactly the CPU's bytes.
// One thread per element, a block of kStoreRowsThreads columns of one row (grid x = rows,
// y = column chunks). For the quant types a warp is one 32-element block: lane l holds
// element l, the block's scale comes from a warp reduction, and the lanes write their codes
// (Q4_0: lanes 0-15 pack their nibble with lane l + 16's). Quant blocks are written byte by
// byte, so they need no alignment.
#pragma once
#include <cstddef>
#include <cstdint>

#include "backend/kv_types.h"
#include "backend/ops.h"
#include "cuda/kernel_api.h"
#include "cuda/kernels/dequant.cuh"
#include "tensor/dtype.h"
#include "util/error.h"

namespace ember::cuda {

namespace {

constexpr int kStoreRowsThreads = 256;  // a multiple of 32: a warp never straddles two quant blocks
constexpr unsigned kStoreRowsLanes = 0xffffffffu;

// A block's fp16 scale, little-endian as the host stores it.
__device__ __forceinline__ void store_scale_bytes(uint8_t* block, float d) {
  const uint16_t h = float_to_half_bits(d);
  block[0] = static_cast<uint8_t>(h & 0xffu);
  block[1] = static_cast<uint8_t>(h >> 8);
}

// |x| as the reference's "fabs(x) > amax" scans see it: NaN and zeros never win.
__device__ __forceinline__ float store_rows_key(float x) {
  const float a = fabsf(x);
  return a > 0.0f ? a : 0.0f;
}

// Q8_0 (quantize_8bit_block): d = amax / 127, q = round half away from zero of x / d.
__device__ __forceinline__ void store_q8_0_lane(float x, int lane, uint8_t* block) {
  float amax = store_rows_key(x);
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(kStoreRowsLanes, amax, o));
  const float d = div_rn(amax, 127.0f);
  const float id = d != 0.0f ? div_rn(1.0f, d) : 0.0f;
  const int q = static_cast<int>(roundf(mul_rn(x, id)));
  block[offsetof(block_q8_0, qs) + lane] = static_cast<uint8_t>(static_cast<int8_t>(q));
  if (lane == 0) store_scale_bytes(block, d);
}

// Q4_0: d = (the first element of largest magnitude, sign kept) / -8, q = trunc(x / d + 8.5)
// capped at 15. The warp reduction keeps the lowest lane among equal magnitudes.
__device__ __forceinline__ void store_q4_0_lane(float x, int lane, uint8_t* block) {
  float key = store_rows_key(x);
  int first = lane;
  for (int o = 16; o > 0; o >>= 1) {
    const float other_key = __shfl_xor_sync(kStoreRowsLanes, key, o);
    const int other_first = __shfl_xor_sync(kStoreRowsLanes, first, o);
    if (other_key > key || (other_key == key && other_first < first)) {
      key = other_key;
      first = other_first;
    }
  }
  const float winner = __shfl_sync(kStoreRowsLanes, x, first);
  const float max = key > 0.0f ? winner : 0.0f;
  const float d = div_rn(max, -8.0f);
  const float id = d != 0.0f ? div_rn(1.0f, d) : 0.0f;
  const int q = min(15, static_cast<int>(add_rn(mul_rn(x, id), 8.5f)));
  const int q_high = __shfl_down_sync(kStoreRowsLanes, q, 16);
  if (lane < 16) block[offsetof(block_q4_0, qs) + lane] = static_cast<uint8_t>(q | (q_high << 4));
  if (lane == 0) store_scale_bytes(block, d);
}

// Element c of a row, value x, written as T to the row at d. For the quant types the calling
// warp's 32 lanes hold the 32 elements of one block, all of them calling.
template <DType T>
__device__ __forceinline__ void store_rows_element_as(float x, int64_t c, uint8_t* d) {
  const int lane = static_cast<int>(c % 32);
  if constexpr (T == DType::F32) {
    reinterpret_cast<float*>(d)[c] = x;
  } else if constexpr (T == DType::F16) {
    reinterpret_cast<uint16_t*>(d)[c] = float_to_half_bits(x);
  } else if constexpr (T == DType::Q8_0) {
    store_q8_0_lane(x, lane, d + (c / 32) * sizeof(block_q8_0));
  } else {
    static_assert(T == DType::Q4_0, "a KV type of backend/kv_types.h without its store_rows case");
    store_q4_0_lane(x, lane, d + (c / 32) * sizeof(block_q4_0));
  }
}

// The same for every row of the KV type table (the launchers refuse other types).
__device__ __forceinline__ void store_rows_element(DType type, float x, int64_t c, uint8_t* d) {
  kv_type_dispatch(type, [&](auto tag) { store_rows_element_as<decltype(tag)::value>(x, c, d); });
}

// A negative destination row is skipped (the launcher cannot read device ids to reject it).
__global__ void __launch_bounds__(kStoreRowsThreads)
    store_rows_kernel(DType type, const uint8_t* __restrict__ src, size_t src_stride, int64_t cols,
                      uint8_t* __restrict__ dst, size_t dst_row_bytes, const int32_t* __restrict__ rows) {
  const int64_t r = blockIdx.x;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * kStoreRowsThreads + threadIdx.x;
  const int32_t dst_row = rows[r];
  if (c >= cols || dst_row < 0) return;  // whole warps for the quant types (cols % 32 == 0)
  const float x = reinterpret_cast<const float*>(src + r * src_stride)[c];
  store_rows_element(type, x, c, dst + static_cast<int64_t>(dst_row) * dst_row_bytes);
}

}  // namespace

// launch_store_rows' checks of everything but the pointers (an empty call may pass none).
inline void check_store_rows_args(const MatView& src, DType type, const void* dst, size_t dst_row_bytes,
                                  const char* op) {
  if (!kv_type_known(type))
    fail(ErrorKind::InvalidArgument, "cuda {}: KV cache type {} is not one of {}", op, dtype_name(type),
         kv_type_names());
  if (src.type != DType::F32 || src.layout != WeightLayout::Rows)
    fail(ErrorKind::InvalidArgument, "cuda {}: the source must be f32 rows, not {}", op, dtype_name(src.type));
  const int block = dtype_size(type).block_size;
  if (src.cols < 0 || src.rows < 0 || src.rows > INT32_MAX || src.cols % block != 0)
    fail(ErrorKind::InvalidArgument, "cuda {}: {} rows of {} elements are not whole {} blocks of {}", op, src.rows,
         src.cols, dtype_name(type), block);
  if (src.row_stride < static_cast<size_t>(src.cols) * sizeof(float) || src.row_stride % sizeof(float) != 0 ||
      reinterpret_cast<uintptr_t>(src.data) % sizeof(float) != 0)
    fail(ErrorKind::InvalidArgument, "cuda {}: source stride {} bytes does not hold aligned rows of {} floats", op,
         src.row_stride, src.cols);
  if (dst_row_bytes < dtype_row_bytes(type, src.cols))
    fail(ErrorKind::InvalidArgument, "cuda {}: destination rows of {} bytes cannot hold {} {} elements", op,
         dst_row_bytes, src.cols, dtype_name(type));
  // F32/F16 are stored as whole values; the quant blocks byte by byte.
  const DTypeSize layout = dtype_size(type);
  const size_t align = layout.block_size == 1 ? static_cast<size_t>(layout.block_bytes) : 1;
  if (reinterpret_cast<uintptr_t>(dst) % align != 0 || dst_row_bytes % align != 0)
    fail(ErrorKind::InvalidArgument, "cuda {}: {} destination rows must be {}-byte aligned", op, dtype_name(type),
         align);
}

// Row r of src (f32) written as `type` (a KV type) to dst + rows[r] * dst_row_bytes,
// for r < src.rows; rows is a device array.
inline void launch_store_rows(const MatView& src, DType type, void* dst, size_t dst_row_bytes, const int32_t* rows,
                              Stream s) {
  check_store_rows_args(src, type, dst, dst_row_bytes, "store_rows");
  const int64_t chunks = (src.cols + kStoreRowsThreads - 1) / kStoreRowsThreads;
  if (chunks > 65535) fail(ErrorKind::InvalidArgument, "cuda store_rows: rows of {} elements are too long", src.cols);
  if (src.rows == 0 || src.cols == 0) return;
  if (src.data == nullptr || dst == nullptr || rows == nullptr)
    fail(ErrorKind::InvalidArgument, "cuda store_rows: null pointer");
  const dim3 grid(static_cast<unsigned>(src.rows), static_cast<unsigned>(chunks));
  EMBER_LAUNCH(store_rows_kernel, grid, kStoreRowsThreads, 0, s, type, static_cast<const uint8_t*>(src.data),
               src.row_stride, src.cols, static_cast<uint8_t*>(dst), dst_row_bytes, rows);
}

}  // namespace ember::cuda
