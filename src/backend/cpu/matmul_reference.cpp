#include "backend/cpu/matmul_reference.h"

#include <vector>

#include "tensor/quant.h"
#include "util/error.h"

namespace ember::ops::reference {

void matmul(const MatView& w, const MatView& x, F32Mat y) {
  if (x.type != DType::F32 || x.cols != w.cols || y.rows != x.rows || y.cols != w.rows)
    fail(ErrorKind::InvalidArgument, "reference::matmul: shapes W {}x{} x {}x{} -> y {}x{} do not match", w.rows,
         w.cols, x.rows, x.cols, y.rows, y.cols);
  std::vector<float> wrow(static_cast<size_t>(w.cols));
  for (int64_t j = 0; j < w.rows; ++j) {
    dequantize_row(w.type, w.row(j), wrow.data(), w.cols);
    for (int64_t t = 0; t < x.rows; ++t) {
      const float* xr = reinterpret_cast<const float*>(x.row(t));
      double sum = 0.0;
      for (int64_t i = 0; i < w.cols; ++i) sum += static_cast<double>(xr[i]) * wrow[i];
      y.row(t)[j] = static_cast<float>(sum);
    }
  }
}

void matmul_id(const ExpertTarget& target, const MatView& x, const int32_t* ids, int n_used) {
  const F32Mat& y = target.y;
  for (int64_t r = 0; r < y.rows; ++r) {
    const int64_t xr = x.rows == y.rows ? r : r / n_used;
    const MatView xrow{DType::F32, x.cols, 1, x.row_stride, x.row(xr)};
    matmul(target.experts[static_cast<size_t>(ids[r])], xrow, F32Mat{y.row(r), y.cols, 1, y.stride});
  }
}

}  // namespace ember::ops::reference
