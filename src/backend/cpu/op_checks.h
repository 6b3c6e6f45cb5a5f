// Argument checks shared by the CPU ops: a bad shape or type is a clear InvalidArgument
// naming the op and the argument, never an out-of-bounds access.
#pragma once
#include <cstdint>

#include "backend/ops.h"
#include "util/error.h"

namespace ember::ops::detail {

inline void require_f32(const MatView& v, const char* op, const char* arg) {
  if (v.type != DType::F32)
    fail(ErrorKind::InvalidArgument, "{}: {} must be F32, got {}", op, arg, dtype_name(v.type));
  if (v.rows > 0 && v.data == nullptr) fail(ErrorKind::InvalidArgument, "{}: {} has no data", op, arg);
  if (v.rows > 1 && v.row_stride < static_cast<size_t>(v.cols) * sizeof(float))
    fail(ErrorKind::InvalidArgument, "{}: {} row stride {} bytes is below its {} columns", op, arg,
         v.row_stride, v.cols);
}

inline void require_valid(const F32Mat& m, const char* op, const char* arg) {
  if (m.rows > 0 && m.data == nullptr) fail(ErrorKind::InvalidArgument, "{}: {} has no data", op, arg);
  if (m.rows > 1 && m.stride < m.cols)
    fail(ErrorKind::InvalidArgument, "{}: {} stride {} is below its {} columns", op, arg, m.stride, m.cols);
}

inline void require_shape(int64_t rows, int64_t cols, int64_t want_rows, int64_t want_cols, const char* op,
                          const char* arg) {
  if (rows != want_rows || cols != want_cols)
    fail(ErrorKind::InvalidArgument, "{}: {} is {}x{}, expected {}x{}", op, arg, rows, cols, want_rows,
         want_cols);
}

inline const float* f32_row(const MatView& v, int64_t r) { return reinterpret_cast<const float*>(v.row(r)); }

// Rows per thread worth a dispatch: small ops (a decode step's single row) run inline.
inline int64_t row_grain(int64_t cols) {
  constexpr int64_t kMinElementsPerTask = 16 * 1024;
  return cols <= 0 ? 1 : (kMinElementsPerTask + cols - 1) / cols;
}

}  // namespace ember::ops::detail
