// Packed kernels on matrices large enough for their widest tiles: test_matmul's shapes
// (at most 41 rows) never reach a tile of several groups, nor the multi-group passes of a
// one-token decode (the F16 kernel takes 8 groups = 64 rows at once; the integer kernels
// pair far-apart groups, which needs ranges of several groups). The driver deals
// rows out in 8 chunks per thread, so 8-group passes need 64 groups: 515 rows = 64 full
// groups of 8 and a short one; 70 tokens = a full token block and 6 left over.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/matmul_reference.h"
#include "util/thread_pool.h"
#include "backend_check.h"
#include "tensor/quant.h"

using namespace ember;

TEST_CASE("packed kernels match the reference and decode = batch on wide tiles") {
  if (!cpu_features().avx2) return;
  check::ScopedSimdLevel avx2(SimdLevel::AVX2);
  const int64_t rows = 64 * 8 + 3, tokens = 70;
  int tested = 0;
  for (DType t : {DType::F16, DType::Q4_0, DType::Q5_0, DType::Q4_1, DType::Q5_1, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::MXFP4}) {
    const int64_t k = 2 * dtype_size(t).block_size * (dtype_size(t).block_size == 1 ? 48 : 2);
    check::Rng rng(static_cast<uint64_t>(t) + 11);
    const size_t row_bytes = dtype_row_bytes(t, k);
    const std::vector<uint8_t> w = check::quantized_normal_rows(t, rows, k, rng);
    const MatView wv{t, k, rows, row_bytes, w.data()};
    std::optional<PackedWeight> packed = ops::pack_weight(wv);
    if (!packed) continue;
    ++tested;
    const std::vector<float> x = rng.uniform(static_cast<size_t>(tokens * k), -2.0f, 2.0f);
    const MatView xv = check::dense_view(x, tokens, k);
    std::vector<float> want(static_cast<size_t>(tokens * rows)), batch(want.size());
    ops::reference::matmul(wv, xv, check::dense_mat(want, tokens, rows));
    const std::string what = std::string(dtype_name(t)) + " packed " + std::to_string(rows) + "x" + std::to_string(k);
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      ops::matmul(pool, packed->view, xv, check::dense_mat(batch, tokens, rows));
      check::expect_close(batch, want, 5e-4, what + ", " + std::to_string(threads) + " threads");
      // Each token alone (the decode path): bitwise the batch's outputs, and so (checked
      // on all of them together) close to the reference.
      std::vector<float> singles(want.size());
      for (int64_t c = 0; c < tokens; ++c) {
        std::vector<float> one(static_cast<size_t>(rows));
        ops::matmul(pool, packed->view, check::dense_view(x.data() + c * k, 1, k), check::dense_mat(one, 1, rows));
        for (int64_t r = 0; r < rows; ++r) {
          INFO(what << ", token " << c << ", row " << r);
          REQUIRE(one[r] == batch[c * rows + r]);
          singles[c * rows + r] = one[r];
        }
      }
      check::expect_close(singles, want, 5e-4, what + ", one token at a time");
      // Batches smaller than a tile (a speculative verification batch) take the decode
      // path's paired groups for each token: bitwise the batch's outputs too.
      for (int64_t n : {2, 3}) {
        std::vector<float> few(static_cast<size_t>(n * rows));
        ops::matmul(pool, packed->view, check::dense_view(x.data(), n, k), check::dense_mat(few, n, rows));
        for (int64_t i = 0; i < n * rows; ++i) {
          INFO(what << ", batch of " << n << ", output " << i);
          REQUIRE(few[i] == batch[i]);
        }
      }
    }
  }
  CHECK(tested >= 2);  // at least Q4_0 and one other format have packed kernels
}
