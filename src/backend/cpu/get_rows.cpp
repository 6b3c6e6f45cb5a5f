// ops::get_rows: embedding lookup, each row converted to f32 by the reference dequantizer
// (a lookup touches a few rows per token; there is nothing to gain from SIMD here).
#include <cstdint>

#include "util/thread_pool.h"
#include "backend/ops.h"
#include "tensor/quant.h"
#include "util/error.h"

namespace ember::ops {

void get_rows(ThreadPool& pool, const MatView& table, const int32_t* ids, int64_t n, F32Mat out) {
  if (table.layout != WeightLayout::Rows)
    fail(ErrorKind::InvalidArgument, "get_rows: the table is repacked for matmul; look rows up in the original");
  if (!dtype_can_quantize(table.type))
    fail(ErrorKind::Unsupported, "get_rows: table type {} is not supported", dtype_name(table.type));
  if (table.cols % quant_traits(table.type)->block_size != 0)
    fail(ErrorKind::InvalidArgument, "get_rows: {} rows of {} elements are not whole blocks", dtype_name(table.type),
         table.cols);
  // fp16 fields and floats are read in place
  const size_t align = (table.type == DType::F32 || table.type == DType::Q8_K) ? 4 : table.type == DType::MXFP4 ? 1 : 2;
  if (reinterpret_cast<uintptr_t>(table.data) % align != 0 || table.row_stride % align != 0)
    fail(ErrorKind::InvalidArgument, "get_rows: {} rows must be {}-byte aligned", dtype_name(table.type), align);
  if (out.rows < n || out.cols != table.cols)
    fail(ErrorKind::InvalidArgument, "get_rows: output {}x{} cannot hold {} rows of {}", out.rows, out.cols, n,
         table.cols);
  // Validate every id up front: workers must not throw.
  for (int64_t t = 0; t < n; ++t)
    if (ids[t] < 0 || ids[t] >= table.rows)
      fail(ErrorKind::InvalidArgument, "get_rows: id {} at position {} is outside the table's {} rows", ids[t], t,
           table.rows);
  pool.parallel_for(n, 8, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) dequantize_row(table.type, table.row(ids[t]), out.row(t), table.cols);
  });
}

}  // namespace ember::ops
