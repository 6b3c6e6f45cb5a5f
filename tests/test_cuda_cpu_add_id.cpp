// add_id (ggml's: a[r] += b[ids[r]], a MoE projection's expert biases): the CPU op, threaded
// and reference, and the CUDA kernel run on the CPU through cuda/cpu_exec by its own launcher,
// each against a plain loop written here. The op is exact (one addition per element), so every
// comparison is bitwise; a is strided with sentinel padding that must stay untouched.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "backend/cpu/ops_reference.h"
#include "backend_check.h"
#include "cuda/cpu_exec/launch.h"
#include "cuda/kernels/elementwise.cuh"
#include "util/error.h"
#include "util/thread_pool.h"

namespace {

using ember::F32Mat;
using ember::MatView;
using ember::check::StridedF32;
namespace check = ember::check;

struct Case {
  int64_t rows, cols, n_expert;
};

// The plain loop: row r of a plus row ids[r] of the dense n_expert x cols table b.
std::vector<float> plain_add_id(std::vector<float> a, const std::vector<float>& b, const std::vector<int32_t>& ids,
                                int64_t cols) {
  for (size_t r = 0; r < ids.size(); ++r)
    for (int64_t c = 0; c < cols; ++c) a[r * cols + c] += b[static_cast<size_t>(ids[r]) * cols + c];
  return a;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

template <class Run>
void check_against_loop(const char* what, Run run) {
  check::Rng rng(29);
  // One row, a decode step of 4 slots, odd widths, a prefill's worth of slots wider than a
  // block of threads.
  const Case cases[] = {{1, 1, 1}, {4, 7, 3}, {12, 64, 8}, {37, 130, 32}, {512, 300, 16}};
  for (const Case& k : cases) {
    const auto a = rng.uniform(static_cast<size_t>(k.rows * k.cols), -2.0f, 2.0f);
    const auto b = rng.uniform(static_cast<size_t>(k.n_expert * k.cols), -2.0f, 2.0f);
    std::vector<int32_t> ids(static_cast<size_t>(k.rows));
    for (auto& id : ids) id = static_cast<int32_t>(rng.integer(0, k.n_expert - 1));
    const auto want = plain_add_id(a, b, ids, k.cols);
    StridedF32 got(a, k.rows, k.cols, 3), table(b, k.n_expert, k.cols, 2);  // both strided
    run(got.mat(), table.view(), ids.data());
    CAPTURE(what);
    CAPTURE(k.rows);
    CAPTURE(k.cols);
    CHECK(got.guards_intact());
    CHECK(same_bits(got.dense(), want));
  }
}

}  // namespace

TEST_CASE("add_id: the threaded CPU op and the reference equal a plain loop bitwise") {
  ember::ThreadPool pool(3);
  check_against_loop("ops::add_id", [&](F32Mat a, const MatView& b, const int32_t* ids) {
    ember::ops::add_id(pool, a, b, ids);
  });
  check_against_loop("reference::add_id",
                     [](F32Mat a, const MatView& b, const int32_t* ids) { ember::ops::reference::add_id(a, b, ids); });
}

TEST_CASE("cpu_exec: launch_add_id equals a plain loop bitwise") {
  check_against_loop("cuda launch_add_id", [](F32Mat a, const MatView& b, const int32_t* ids) {
    ember::cuda::launch_add_id(a, b, ids, nullptr);
  });
}

TEST_CASE("add_id: an id outside the table or a width mismatch is an error, nothing written") {
  ember::ThreadPool pool(2);
  std::vector<float> a(6, 1.0f), b(4, 0.5f);
  const MatView table = check::dense_view(b, 2, 2);
  const std::vector<int32_t> bad{0, 2, 1};
  CHECK_THROWS_AS(ember::ops::add_id(pool, check::dense_mat(a, 3, 2), table, bad.data()), ember::Error);
  CHECK(a == std::vector<float>(6, 1.0f));
  const std::vector<int32_t> negative{0, -1, 1};
  CHECK_THROWS_AS(ember::ops::add_id(pool, check::dense_mat(a, 3, 2), table, negative.data()), ember::Error);
  const std::vector<int32_t> ok{0, 1, 1};
  std::vector<float> wide(9, 1.0f);
  CHECK_THROWS_AS(ember::ops::add_id(pool, check::dense_mat(wide, 3, 3), table, ok.data()), ember::Error);
  CHECK_THROWS_AS(ember::cuda::launch_add_id(check::dense_mat(wide, 3, 3), table, ok.data(), nullptr), ember::Error);
}
