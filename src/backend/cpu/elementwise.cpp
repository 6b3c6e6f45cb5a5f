// Elementwise add, mul and scale of f32 rows, and add_id (an indexed row added). These are
// exact (one rounding per element), so the reference and the threaded op share the row
// loop; the compiler vectorises it.
#include "backend/cpu/op_checks.h"
#include "backend/cpu/ops_reference.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace ember::ops {
namespace {

enum class Binary { Add, Mul };

// torch: a += b  /  a *= b   (b broadcast over rows when it has one row)
void binary_row(Binary op, float* a, const float* b, int64_t n) {
  if (op == Binary::Add)
    for (int64_t i = 0; i < n; ++i) a[i] += b[i];
  else
    for (int64_t i = 0; i < n; ++i) a[i] *= b[i];
}

// torch: a *= s
void scale_row(float* a, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) a[i] *= s;
}

void check_binary(const F32Mat& a, const MatView& b, const char* op) {
  detail::require_valid(a, op, "a");
  detail::require_f32(b, op, "b");
  if (b.cols != a.cols || (b.rows != 1 && b.rows != a.rows))
    fail(ErrorKind::InvalidArgument, "{}: b is {}x{}, expected {}x{} or 1x{}", op, b.rows, b.cols, a.rows, a.cols,
         a.cols);
}

const float* b_row(const MatView& b, int64_t r) { return detail::f32_row(b, b.rows == 1 ? 0 : r); }

void binary(ThreadPool* pool, Binary op, F32Mat a, const MatView& b) {
  check_binary(a, b, op == Binary::Add ? "add" : "mul");
  auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) binary_row(op, a.row(r), b_row(b, r), a.cols);
  };
  if (pool)
    pool->parallel_for(a.rows, detail::row_grain(a.cols), rows);
  else
    rows(0, a.rows);
}

void scale_rows(ThreadPool* pool, F32Mat a, float s) {
  detail::require_valid(a, "scale", "a");
  auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) scale_row(a.row(r), s, a.cols);
  };
  if (pool)
    pool->parallel_for(a.rows, detail::row_grain(a.cols), rows);
  else
    rows(0, a.rows);
}

// a[r] += b[ids[r]]; every id is checked before any row changes.
void add_id_rows(ThreadPool* pool, F32Mat a, const MatView& b, const int32_t* ids) {
  detail::require_valid(a, "add_id", "a");
  detail::require_f32(b, "add_id", "b");
  if (b.cols != a.cols) fail(ErrorKind::InvalidArgument, "add_id: b has {} columns, a has {}", b.cols, a.cols);
  if (a.rows > 0 && ids == nullptr) fail(ErrorKind::InvalidArgument, "add_id: no ids");
  for (int64_t r = 0; r < a.rows; ++r)
    if (ids[r] < 0 || ids[r] >= b.rows)
      fail(ErrorKind::InvalidArgument, "add_id: ids[{}] = {} is outside b's {} rows", r, ids[r], b.rows);
  auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) binary_row(Binary::Add, a.row(r), detail::f32_row(b, ids[r]), a.cols);
  };
  if (pool)
    pool->parallel_for(a.rows, detail::row_grain(a.cols), rows);
  else
    rows(0, a.rows);
}

}  // namespace

namespace reference {
void add(F32Mat a, const MatView& b) { binary(nullptr, Binary::Add, a, b); }
void mul(F32Mat a, const MatView& b) { binary(nullptr, Binary::Mul, a, b); }
void scale(F32Mat a, float s) { scale_rows(nullptr, a, s); }
void add_id(F32Mat a, const MatView& b, const int32_t* ids) { add_id_rows(nullptr, a, b, ids); }
}  // namespace reference

void add(ThreadPool& pool, F32Mat a, const MatView& b) { binary(&pool, Binary::Add, a, b); }
void mul(ThreadPool& pool, F32Mat a, const MatView& b) { binary(&pool, Binary::Mul, a, b); }
void scale(ThreadPool& pool, F32Mat a, float s) { scale_rows(&pool, a, s); }
void add_id(ThreadPool& pool, F32Mat a, const MatView& b, const int32_t* ids) { add_id_rows(&pool, a, b, ids); }

}  // namespace ember::ops
