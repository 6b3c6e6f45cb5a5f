// Row-wise softmax, numerically stable (subtracts the row max). A row that is entirely -inf
// (every position masked) becomes all zeros rather than NaN.
#include <cmath>
#include <limits>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/op_checks.h"
#include "backend/cpu/ops_reference.h"
#include "backend/cpu/row_kernels.h"
#include "util/thread_pool.h"

namespace ember::ops {
namespace {

// torch: a = torch.softmax(a, dim=-1)
void softmax_row_reference(float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = std::fmax(max, x[i]);
  if (max == -std::numeric_limits<float>::infinity()) {
    for (int64_t i = 0; i < n; ++i) x[i] = 0.0f;
    return;
  }
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - max);
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::exp(static_cast<double>(x[i]) - max) / sum);
}

}  // namespace

namespace reference {
void softmax(F32Mat a) {
  detail::require_valid(a, "softmax", "a");
  for (int64_t r = 0; r < a.rows; ++r) softmax_row_reference(a.row(r), a.cols);
}
}  // namespace reference

void softmax(ThreadPool& pool, F32Mat a) {
  detail::require_valid(a, "softmax", "a");
  if (a.cols == 0) return;
  const auto row_fn = simd_level() >= SimdLevel::AVX2 ? avx2::softmax_row : softmax_row_reference;
  pool.parallel_for(a.rows, detail::row_grain(a.cols), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) row_fn(a.row(r), a.cols);
  });
}

}  // namespace ember::ops
