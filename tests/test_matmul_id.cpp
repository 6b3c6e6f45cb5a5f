// The expert matmul (ops::matmul_id, ggml's mul_mat_id) against its reference loop for every
// weight type, rows in the file's layout and repacked; a row's result bitwise the same
// whatever other rows share the call; and the routing and weighted sum of the MoE block.
#include <doctest/doctest.h>

#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cpu/matmul_reference.h"
#include "backend/ops.h"
#include "backend_check.h"
#include "tensor/quant.h"
#include "util/thread_pool.h"

using namespace ember;

namespace {

// n_expert random weight matrices of rows x k in type t, each also repacked where the CPU
// has a packed kernel for t.
struct Experts {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<PackedWeight> packed;
  std::vector<MatView> rows_layout, best;  // the file's rows; the repacked copy where there is one
  Experts(DType t, int n_expert, int64_t rows, int64_t k, check::Rng& rng) {
    const size_t rb = dtype_row_bytes(t, k);
    for (int e = 0; e < n_expert; ++e) {
      bytes.emplace_back(rb * rows);
      const std::vector<float> src = rng.uniform(static_cast<size_t>(rows * k));
      for (int64_t r = 0; r < rows; ++r) quantize_row_reference(t, &src[r * k], bytes.back().data() + r * rb, k);
    }
    for (int e = 0; e < n_expert; ++e) {
      rows_layout.push_back(MatView{t, k, rows, rb, bytes[e].data()});
      std::optional<PackedWeight> p = ops::pack_weight(rows_layout.back());
      if (p) packed.push_back(std::move(*p));
      best.push_back(p ? packed.back().view : rows_layout.back());
    }
  }
};

// n_tokens x n_used distinct expert ids.
std::vector<int32_t> random_ids(check::Rng& rng, int n_tokens, int n_used, int n_expert) {
  std::vector<int32_t> ids;
  for (int t = 0; t < n_tokens; ++t) {
    std::vector<int32_t> row;
    while (static_cast<int>(row.size()) < n_used) {
      const int32_t e = static_cast<int32_t>(rng.integer(0, n_expert - 1));
      if (std::find(row.begin(), row.end(), e) == row.end()) row.push_back(e);
    }
    ids.insert(ids.end(), row.begin(), row.end());
  }
  return ids;
}

constexpr DType kTypes[] = {DType::F32, DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                            DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K};

}  // namespace

TEST_CASE("matmul_id matches the reference loop for every weight type, shared and per-slot inputs") {
  check::Rng rng(29);
  ThreadPool pool(3);
  const int n_expert = 6, n_used = 2;
  const int64_t k = 256, rows = 40;
  for (DType t : kTypes) {
    const Experts gate(t, n_expert, rows, k, rng), up(t, n_expert, rows, k, rng);
    for (int n_tokens : {1, 3, 17}) {
      const std::vector<int32_t> ids = random_ids(rng, n_tokens, n_used, n_expert);
      const int64_t n_rows = static_cast<int64_t>(n_tokens) * n_used;
      for (const bool per_slot : {false, true}) {
        const int64_t x_rows = per_slot ? n_rows : n_tokens;
        const std::vector<float> x = rng.uniform(static_cast<size_t>(x_rows * k));
        const MatView xv = check::dense_view(x, x_rows, k);
        std::vector<float> want_g(n_rows * rows), want_u(n_rows * rows);
        ops::reference::matmul_id({gate.rows_layout, check::dense_mat(want_g, n_rows, rows)}, xv, ids.data(), n_used);
        ops::reference::matmul_id({up.rows_layout, check::dense_mat(want_u, n_rows, rows)}, xv, ids.data(), n_used);
        for (const bool packed : {false, true}) {
          std::vector<float> got_g(want_g.size(), NAN), got_u(want_u.size(), NAN);
          ops::matmul_id(pool,
                         {{packed ? gate.best : gate.rows_layout, check::dense_mat(got_g, n_rows, rows)},
                          {packed ? up.best : up.rows_layout, check::dense_mat(got_u, n_rows, rows)}},
                         xv, ids.data(), n_used);
          const std::string what = std::string(dtype_name(t)) + " tokens " + std::to_string(n_tokens) +
                                   (per_slot ? " per-slot" : " shared") + (packed ? " packed" : " rows");
          check::expect_close(got_g, want_g, 5e-4, what + " gate");
          check::expect_close(got_u, want_u, 5e-4, what + " up");
        }
      }
    }
  }
}

TEST_CASE("matmul_id: a row gives the same bits alone, in any batch, and as a plain matmul of its expert") {
  check::Rng rng(7);
  ThreadPool pool(4);
  const int n_expert = 8, n_used = 3, n_tokens = 37;
  for (const auto [t, k, rows] : {std::tuple{DType::F32, 512, 96}, {DType::F16, 512, 96}, {DType::Q8_0, 512, 96},
                                  {DType::Q4_0, 512, 96}, {DType::Q4_K, 512, 96}, {DType::Q6_K, 512, 96},
                                  {DType::Q5_0, 64, 128}, {DType::Q8_0, 128, 64}, {DType::Q5_1, 128, 256},
                                  {DType::Q4_K, 256, 128}, {DType::BF16, 128, 64}, {DType::Q4_1, 256, 64},
                                  {DType::Q5_K, 256, 64}, {DType::Q2_K, 256, 64}, {DType::Q3_K, 256, 64}}) {
    const Experts w(t, n_expert, rows, k, rng);
    const std::vector<int32_t> ids = random_ids(rng, n_tokens, n_used, n_expert);
    const std::vector<float> x = rng.uniform(static_cast<size_t>(n_tokens * k));
    std::vector<float> all(static_cast<size_t>(n_tokens * n_used * rows));
    ops::matmul_id(pool, {{w.best, check::dense_mat(all, n_tokens * n_used, rows)}}, check::dense_view(x, n_tokens, k),
                   ids.data(), n_used);
    for (int tok = 0; tok < n_tokens; ++tok) {
      // Alone: the token's row and ids as a one-token call.
      std::vector<float> alone(static_cast<size_t>(n_used * rows));
      ops::matmul_id(pool, {{w.best, check::dense_mat(alone, n_used, rows)}}, check::dense_view(&x[tok * k], 1, k),
                     &ids[tok * n_used], n_used);
      CHECK_MESSAGE(std::memcmp(alone.data(), &all[tok * n_used * rows], alone.size() * sizeof(float)) == 0,
                    std::string(dtype_name(t)), " k ", k, " token ", tok, " alone differs from its row in the batch");
      // As the plain matmul of the expert it chose first.
      std::vector<float> plain(static_cast<size_t>(rows));
      ops::matmul(pool, w.best[ids[tok * n_used]], check::dense_view(&x[tok * k], 1, k), check::dense_mat(plain, 1, rows));
      CHECK_MESSAGE(std::memcmp(plain.data(), &all[tok * n_used * rows], plain.size() * sizeof(float)) == 0,
                    std::string(dtype_name(t)), " token ", tok, " differs from matmul with its expert");
    }
  }
}

TEST_CASE("matmul_id refuses an out-of-range expert id and mismatched shapes") {
  check::Rng rng(1);
  ThreadPool pool(1);
  const Experts w(DType::F32, 2, 4, 32, rng);
  std::vector<float> x(32, 1.0f), y(8);
  const int32_t bad[] = {0, 2};
  CHECK_THROWS(ops::matmul_id(pool, {{w.best, check::dense_mat(y, 2, 4)}}, check::dense_view(x, 1, 32), bad, 2));
  const int32_t ok[] = {0, 1};
  CHECK_THROWS(ops::matmul_id(pool, {{w.best, check::dense_mat(y, 2, 4)}}, check::dense_view(x, 1, 16), ok, 2));
}

TEST_CASE("moe_route: softmax then top-k, renormalised or not") {
  const float logits[] = {1.0f, 3.0f, 2.0f, 0.0f};
  const MatView lv = check::dense_view(logits, 1, 4);
  float sum = 0;
  for (float l : logits) sum += std::exp(l);
  int32_t ids[2];
  float w[2];
  MoeRouting r{.n_expert = 4, .n_used = 2};
  ops::moe_route(lv, r, ids, w);
  CHECK(ids[0] == 1);
  CHECK(ids[1] == 2);
  CHECK(w[0] == doctest::Approx(std::exp(3.0f) / sum));
  CHECK(w[1] == doctest::Approx(std::exp(2.0f) / sum));
  r.norm_weights = true;  // = softmax over the two chosen logits
  ops::moe_route(lv, r, ids, w);
  CHECK(w[0] == doctest::Approx(std::exp(1.0f) / (std::exp(1.0f) + 1.0f)));
  CHECK(w[0] + w[1] == doctest::Approx(1.0f));
  r.weights_scale = 2.5f;
  ops::moe_route(lv, r, ids, w);
  CHECK(w[0] + w[1] == doctest::Approx(2.5f));
}

TEST_CASE("moe_route: a selection bias chooses, the unbiased probabilities weigh") {
  const float logits[] = {0.0f, 1.0f, -1.0f};
  const float bias[] = {0.0f, 0.0f, 5.0f};
  MoeRouting r{.n_expert = 3, .n_used = 1, .gating = MoeGating::Sigmoid, .selection_bias = bias};
  int32_t id;
  float w;
  ops::moe_route(check::dense_view(logits, 1, 3), r, &id, &w);
  CHECK(id == 2);
  CHECK(w == doctest::Approx(1.0f / (1.0f + std::exp(1.0f))));
}

TEST_CASE("moe_route: top-k of the raw logits then a softmax over the chosen (gpt-oss), ties to the lower id") {
  const float logits[] = {2.0f, 5.0f, 2.0f, 4.0f};
  MoeRouting r{.n_expert = 4, .n_used = 3, .gating = MoeGating::SoftmaxSelected};
  int32_t ids[3];
  float w[3];
  ops::moe_route(check::dense_view(logits, 1, 4), r, ids, w);
  CHECK(ids[0] == 1);
  CHECK(ids[1] == 3);
  CHECK(ids[2] == 0);  // 0 and 2 tie; the lower id wins
  const float z = std::exp(5.0f) + std::exp(4.0f) + std::exp(2.0f);
  CHECK(w[0] == doctest::Approx(std::exp(5.0f) / z));
  CHECK(w[2] == doctest::Approx(std::exp(2.0f) / z));
}

TEST_CASE("moe_combine: weighted sum of the slots plus a sigmoid-gated shared expert") {
  ThreadPool pool(2);
  // 2 tokens, 2 slots, width 3.
  const std::vector<float> e = {1, 2, 3, 10, 20, 30, -1, 0, 1, 4, 4, 4};
  const std::vector<float> w = {0.5f, 0.25f, 1.0f, 2.0f};
  const std::vector<float> sh = {1, 1, 1, 2, 2, 2};
  const std::vector<float> g = {0.0f, 100.0f};  // sigmoid 0.5 and ~1
  std::vector<float> out(6);
  ops::moe_combine(pool, check::dense_view(e, 4, 3), w.data(), 2, MatView{}, MatView{}, check::dense_mat(out, 2, 3));
  CHECK(out == std::vector<float>{3.0f, 6.0f, 9.0f, 7.0f, 8.0f, 9.0f});
  ops::moe_combine(pool, check::dense_view(e, 4, 3), w.data(), 2, check::dense_view(sh, 2, 3), check::dense_view(g, 2, 1),
                   check::dense_mat(out, 2, 3));
  CHECK(out == std::vector<float>{3.5f, 6.5f, 9.5f, 9.0f, 10.0f, 11.0f});
}
