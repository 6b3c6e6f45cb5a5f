// For the hand-built packed-kernel tests: one matmul through the reference loop and one
// through the weight's packed copy, on the same inputs.
#pragma once
#include <doctest/doctest.h>

#include <optional>
#include <vector>

#include "backend/cpu/matmul_reference.h"
#include "util/thread_pool.h"
#include "backend_check.h"

namespace ember::check {

struct PackedProducts {
  std::vector<float> want;  // reference loop on w's rows
  std::vector<float> got;   // packed kernel, 2 threads
};

// x has x.rows tokens of w.cols elements; w's type must have a packed kernel on this CPU.
inline PackedProducts reference_and_packed(const MatView& w, const MatView& x) {
  PackedProducts out;
  out.want.resize(static_cast<size_t>(x.rows * w.rows));
  ops::reference::matmul(w, x, dense_mat(out.want, x.rows, w.rows));
  std::optional<PackedWeight> packed = ops::pack_weight(w);
  REQUIRE(packed.has_value());
  ThreadPool pool(2);
  out.got.resize(out.want.size());
  ops::matmul(pool, packed->view, x, dense_mat(out.got, x.rows, w.rows));
  return out;
}

}  // namespace ember::check
