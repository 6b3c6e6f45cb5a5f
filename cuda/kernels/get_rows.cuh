// get_rows: out[t] = table row ids[t] as f32, for every type dequant.cuh reads (embedding
// lookups and KV rows). One thread per output element, a block of kGetRowsThreads columns
// of one output row (grid x = output rows, y = column chunks): writes are coalesced and
// load_element reads only the element's bytes and its block's scales (cached for the
// neighbouring threads). The values are dequantize_row's bit for bit (dequant.cuh).
#pragma once
#include <cstdint>

#include "backend/ops.h"
#include "cuda/kernel_api.h"
#include "cuda/kernels/dequant.cuh"
#include "tensor/dtype.h"
#include "util/error.h"

namespace ember::cuda {

namespace {

constexpr int kGetRowsThreads = 256;

// An id outside the table cannot throw on the device: its row comes out NaN, so the
// mistake shows downstream (the CPU's get_rows throws instead).
__global__ void __launch_bounds__(kGetRowsThreads)
    get_rows_kernel(DType type, const uint8_t* __restrict__ table, size_t row_stride, int64_t table_rows,
                    const int32_t* __restrict__ ids, float* __restrict__ out, int64_t out_stride, int64_t cols) {
  const int64_t t = blockIdx.x;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * kGetRowsThreads + threadIdx.x;
  if (c >= cols) return;
  const int64_t id = ids[t];
  float v = __uint_as_float(0x7fc00000u);
  if (id >= 0 && id < table_rows) v = load_element(type, table + id * row_stride, c);
  out[t * out_stride + c] = v;
}

// The alignment load_element needs of rows of `type`: floats 4, fp16 fields 2.
inline size_t get_rows_alignment(DType type) { return type == DType::F32 ? 4 : type == DType::MXFP4 ? 1 : 2; }

}  // namespace

// out[t] = table[ids[t]] converted to f32 for t < n; ids is a device array of n row numbers.
inline void launch_get_rows(const MatView& table, const int32_t* ids, int64_t n, F32Mat out, Stream s) {
  if (table.layout != WeightLayout::Rows)
    fail(ErrorKind::InvalidArgument, "cuda get_rows: the table is repacked for matmul; look rows up in the original");
  if (!dequant_supported(table.type))
    fail(ErrorKind::InvalidArgument, "cuda get_rows: table type {} is not supported", dtype_name(table.type));
  const int block = dtype_size(table.type).block_size;
  if (table.cols < 0 || table.cols % block != 0 || table.rows < 0)
    fail(ErrorKind::InvalidArgument, "cuda get_rows: a {}x{} {} table is not rows of whole blocks", table.rows,
         table.cols, dtype_name(table.type));
  if (table.row_stride < dtype_row_bytes(table.type, table.cols))
    fail(ErrorKind::InvalidArgument, "cuda get_rows: row stride {} is shorter than a row of {} {} elements",
         table.row_stride, table.cols, dtype_name(table.type));
  const size_t align = get_rows_alignment(table.type);
  if (reinterpret_cast<uintptr_t>(table.data) % align != 0 || table.row_stride % align != 0)
    fail(ErrorKind::InvalidArgument, "cuda get_rows: {} rows must be {}-byte aligned", dtype_name(table.type), align);
  if (n < 0 || n > INT32_MAX || out.rows < n || out.cols != table.cols || out.stride < out.cols)
    fail(ErrorKind::InvalidArgument, "cuda get_rows: output {}x{} (stride {}) cannot hold {} rows of {}", out.rows,
         out.cols, out.stride, n, table.cols);
  const int64_t chunks = (table.cols + kGetRowsThreads - 1) / kGetRowsThreads;
  if (chunks > 65535) fail(ErrorKind::InvalidArgument, "cuda get_rows: rows of {} elements are too long", table.cols);
  if (n == 0 || table.cols == 0) return;
  if (ids == nullptr || table.data == nullptr || out.data == nullptr)
    fail(ErrorKind::InvalidArgument, "cuda get_rows: null pointer");
  const dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>(chunks));
  EMBER_LAUNCH(get_rows_kernel, grid, kGetRowsThreads, 0, s, table.type, static_cast<const uint8_t*>(table.data),
               table.row_stride, table.rows, ids, out.data, out.stride, table.cols);
}

}  // namespace ember::cuda
