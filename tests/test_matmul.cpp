// ops::matmul and ops::get_rows against the reference loop (dequantize, dot in double), for
// every weight type x SIMD level x thread count, on odd shapes and strided views.
#include <doctest/doctest.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/matmul_reference.h"
#include "util/thread_pool.h"
#include "backend_check.h"
#include "tensor/quant.h"
#include "util/error.h"

using namespace ember;

namespace {

const DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0, DType::Q4_1,
                              DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                              DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::MXFP4};

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// Quantized weights with `pad` spare bytes after each row (a strided view), sentinel-fenced.
// pad keeps rows aligned for F32 (a multiple of 4), as matmul requires.
struct Weights {
  check::GuardedBuffer buf;
  MatView view;
  Weights(DType t, int64_t rows, int64_t cols, check::Rng& rng, size_t pad)
      : buf((dtype_row_bytes(t, cols) + pad) * static_cast<size_t>(rows), 0x5A) {
    const size_t stride = dtype_row_bytes(t, cols) + pad;
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> x = rng.normal(static_cast<size_t>(cols), 0.0f, 1.0f);
      quantize_row_reference(t, x.data(), buf.data() + r * stride, cols);
    }
    view = MatView{t, cols, rows, stride, buf.data()};
  }
};

// When this level repacks w's type: the packed copy matches the reference, gives every token
// and bitwise what that token alone gives (decode = batch, which speculative decoding needs).
void check_packed(const MatView& w, const MatView& x, const std::vector<float>& want, SimdLevel level) {
  std::optional<PackedWeight> packed = ops::pack_weight(w);
  if (!packed) return;
  const std::string what = std::string(dtype_name(w.type)) + " packed " + std::to_string(w.rows) + "x" +
                           std::to_string(w.cols) + ", " + std::to_string(x.rows) + " tokens, " + simd_level_name(level);
  INFO(what);
  CHECK(packed->view.layout == WeightLayout::Interleaved);
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    check::StridedF32 y(x.rows, w.rows, 2);
    ops::matmul(pool, packed->view, x, y.mat());
    check::expect_close(y.dense(), want, 5e-4, what + ", " + std::to_string(threads) + " threads");
    CHECK(y.guards_intact());
    const std::vector<float> batch = y.dense();
    for (int64_t t = 0; t < x.rows; ++t) {
      MatView one = x;
      one.rows = 1;
      one.data = x.row(t);
      std::vector<float> single(static_cast<size_t>(w.rows));
      ops::matmul(pool, packed->view, one, check::dense_mat(single, 1, w.rows));
      for (int64_t r = 0; r < w.rows; ++r) REQUIRE(single[r] == batch[t * w.rows + r]);
    }
  }
}

// Float weights are exact but for f32 summation order, except BF16 on CPUs with AVX-512
// BF16: that kernel rounds the activations to bf16 (as llama.cpp does), ~4e-6 here.
double tolerance(DType t, SimdLevel level) {
  if (t == DType::BF16 && level >= SimdLevel::AVX512 && cpu_features().avx512_bf16) return 5e-4;
  return is_float(t) ? 1e-9 : 5e-4;
}

void check_matmul(DType t, int64_t rows, int64_t tokens, int64_t k, uint64_t seed) {
  check::Rng rng(seed);
  Weights w(t, rows, k, rng, 8);
  check::StridedF32 x(rng.uniform(static_cast<size_t>(tokens * k), -2.0f, 2.0f), tokens, k, 3);
  std::vector<float> want(static_cast<size_t>(tokens * rows));
  ops::reference::matmul(w.view, x.view(), check::dense_mat(want, tokens, rows));
  for (SimdLevel level : check::simd_levels()) {
    check::ScopedSimdLevel scoped(level);
    for (int threads : {1, 3}) {
      ThreadPool pool(threads);
      check::StridedF32 y(tokens, rows, 2);
      ops::matmul(pool, w.view, x.view(), y.mat());
      const std::string what = std::string(dtype_name(t)) + " " + std::to_string(rows) + "x" + std::to_string(k) +
                               " weights, " + std::to_string(tokens) + " tokens, " + simd_level_name(level) + ", " +
                               std::to_string(threads) + " threads";
      check::expect_close(y.dense(), want, tolerance(t, level), what);
      INFO(what);
      CHECK(y.guards_intact());
    }
    check_packed(w.view, x.view(), want, level);
  }
  CHECK(w.buf.guards_intact());
}

int64_t block_k(DType t, int64_t blocks) { return blocks * (is_float(t) ? 32 : dtype_size(t).block_size); }

}  // namespace

TEST_CASE("matmul matches the reference for every weight type, level and thread count") {
  uint64_t seed = 1;
  for (DType t : kWeightTypes) {
    // 5x7: a single odd tile; 13 rows over 3 threads; one token (matvec); 70 tokens crosses
    // a token block; 41 rows is not a multiple of the row grouping.
    check_matmul(t, 7, 5, block_k(t, 3), seed++);
    check_matmul(t, 13, 1, block_k(t, 5), seed++);
    check_matmul(t, 41, 3, block_k(t, 1), seed++);
    check_matmul(t, 19, 70, block_k(t, 2), seed++);
  }
}

TEST_CASE("one token over many threads: every row is computed once, whatever the chunking") {
  // 2000 rows in groups of 8 give the guided chunks of 2, 5 and 20 threads (the last of them
  // share the rest evenly) and, at 70 threads, equal chunks; each output must match the
  // reference, and none may be left out (the output starts as NaN).
  const int64_t rows = 2000, k = 64;
  for (DType t : {DType::Q4_0, DType::Q8_0}) {
    std::vector<float> src(static_cast<size_t>(rows * k)), x(static_cast<size_t>(k));
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>((i * 7919) % 201) / 100.0f - 1.0f;
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) / 6.0f - 1.0f;
    const size_t rb = dtype_row_bytes(t, k);
    std::vector<uint8_t> wb(rb * rows);
    for (int64_t r = 0; r < rows; ++r) quantize_row_reference(t, src.data() + r * k, wb.data() + r * rb, k);
    const MatView wv{t, k, rows, rb, wb.data()};
    std::vector<float> want(static_cast<size_t>(rows));
    ops::reference::matmul(wv, check::dense_view(x, 1, k), check::dense_mat(want, 1, rows));
    const std::optional<PackedWeight> packed = ops::pack_weight(wv);
    for (int threads : {2, 5, 20, 70}) {
      ThreadPool pool(threads);
      for (const MatView& w : {wv, packed ? packed->view : wv}) {
        std::vector<float> got(want.size(), std::numeric_limits<float>::quiet_NaN());
        ops::matmul(pool, w, check::dense_view(x, 1, k), check::dense_mat(got, 1, rows));
        check::expect_close(got, want, 5e-4, std::string(dtype_name(t)) + " t" + std::to_string(threads));
      }
    }
  }
}

TEST_CASE("extreme codes over a long row do not overflow the integer accumulators") {
  // Every weight and activation at the edge of its code range, signs aligned so all
  // products add up: the worst case for the int16 pair sums and int32 block sums.
  const int64_t k = 4096, rows = 5, tokens = 5;
  std::vector<float> xs(static_cast<size_t>(tokens * k));
  for (int64_t i = 0; i < tokens * k; ++i) xs[i] = (i % 3 == 0 ? -100.0f : 100.0f);
  MatView xv = check::dense_view(xs, tokens, k);
  for (DType t : kWeightTypes) {
    const size_t rb = dtype_row_bytes(t, k);
    std::vector<uint8_t> wb(rb * rows);
    std::vector<float> src(static_cast<size_t>(k));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < k; ++i) src[i] = (i % 3 == 0 ? -1.0f : 1.0f) * (r + 1);
      quantize_row_reference(t, src.data(), wb.data() + r * rb, k);
    }
    MatView wv{t, k, rows, rb, wb.data()};
    std::vector<float> want(static_cast<size_t>(tokens * rows));
    ops::reference::matmul(wv, xv, check::dense_mat(want, tokens, rows));
    for (SimdLevel level : check::simd_levels()) {
      check::ScopedSimdLevel scoped(level);
      ThreadPool pool(2);
      std::vector<float> got(want.size());
      ops::matmul(pool, wv, xv, check::dense_mat(got, tokens, rows));
      check::expect_close(got, want, 5e-4, std::string(dtype_name(t)) + " saturated, " + simd_level_name(level));
      if (std::optional<PackedWeight> packed = ops::pack_weight(wv)) {
        ops::matmul(pool, packed->view, xv, check::dense_mat(got, tokens, rows));
        check::expect_close(got, want, 5e-4, std::string(dtype_name(t)) + " packed, saturated");
      }
    }
  }
}

TEST_CASE("float weights allow any row length") {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    check_matmul(t, 5, 7, 37, 100);
    check_matmul(t, 9, 2, 3, 101);
  }
}

TEST_CASE("matmuls of one input in one dispatch give bitwise what separate matmuls give") {
  // A Q4_K_M-style layer: Q and K in Q4_K, V in Q6_K (same Q8K activations), plus a Q4_0
  // matrix (Q8S activations) and an F16 one (f32 activations), packed and in rows; shapes
  // as small as GQA's K and V (8 rows, fewer than the threads' row groups) and odd ones.
  check::Rng rng(77);
  const int64_t k = 512;
  struct Case {
    DType type;
    int64_t rows;
  };
  const Case cases[] = {{DType::Q4_K, 40}, {DType::Q4_K, 8}, {DType::Q6_K, 8}, {DType::Q4_0, 27}, {DType::F16, 5}};
  std::vector<Weights> weights;
  for (const Case& c : cases) weights.emplace_back(c.type, c.rows, k, rng, 0);
  for (int64_t tokens : {1, 3, 70}) {
    check::StridedF32 x(rng.uniform(static_cast<size_t>(tokens * k), -2.0f, 2.0f), tokens, k, 3);
    for (bool packed : {false, true}) {
      std::vector<std::optional<PackedWeight>> copies;
      std::vector<MatView> views;
      for (const Weights& w : weights) {
        copies.push_back(packed ? ops::pack_weight(w.view) : std::nullopt);
        views.push_back(copies.back() ? copies.back()->view : w.view);
      }
      for (int threads : {1, 2, 3}) {
        INFO(tokens << " tokens, " << (packed ? "packed" : "rows") << ", " << threads << " threads");
        ThreadPool pool(threads);
        std::vector<std::vector<float>> alone;
        for (const MatView& v : views) {
          alone.emplace_back(static_cast<size_t>(tokens * v.rows));
          ops::matmul(pool, v, x.view(), check::dense_mat(alone.back(), tokens, v.rows));
        }
        std::vector<check::StridedF32> together;
        for (const MatView& v : views) together.emplace_back(tokens, v.rows, 2);
        ops::matmul_same_input(pool, {{views[0], together[0].mat()}, {views[1], together[1].mat()}, {views[2], together[2].mat()}},
                               x.view());
        ops::matmul_same_input(pool, {{views[3], together[3].mat()}, {views[4], together[4].mat()}}, x.view());
        for (size_t i = 0; i < views.size(); ++i) {
          INFO("matrix " << i << " (" << dtype_name(views[i].type) << ")");
          CHECK(together[i].dense() == alone[i]);
          CHECK(together[i].guards_intact());
        }
      }
    }
  }
}

TEST_CASE("matmul rejects what it cannot compute") {
  ThreadPool pool(1);
  std::vector<float> x(64), y(4);
  std::vector<uint8_t> w(1024);
  MatView xv = check::dense_view(x, 1, 64);
  auto expect_error = [&](MatView wv, F32Mat yv, ErrorKind kind) {
    try {
      ops::matmul(pool, wv, xv, yv);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.kind() == kind);
    }
  };
  expect_error(MatView{DType::IQ2_XXS, 256, 1, 66, w.data()}, check::dense_mat(y, 1, 1), ErrorKind::Unsupported);
  expect_error(MatView{DType::Q4_0, 64, 2, 36, w.data()}, check::dense_mat(y, 1, 3), ErrorKind::InvalidArgument);
  expect_error(MatView{DType::Q4_0, 48, 1, 36, w.data()}, check::dense_mat(y, 1, 1), ErrorKind::InvalidArgument);
  expect_error(MatView{DType::F32, 64, 1, 257, w.data() + 1}, check::dense_mat(y, 1, 1), ErrorKind::InvalidArgument);
}

TEST_CASE("get_rows converts the chosen rows of any type") {
  check::Rng rng(3);
  ThreadPool pool(3);
  for (DType t : kWeightTypes) {
    const int64_t cols = block_k(t, 2), rows = 11;
    Weights table(t, rows, cols, rng, 12);
    const std::vector<int32_t> ids = {3, 0, 10, 3, 7};
    check::StridedF32 out(5, cols, 1);
    ops::get_rows(pool, table.view, ids.data(), 5, out.mat());
    std::vector<float> want(static_cast<size_t>(cols));
    for (int64_t i = 0; i < 5; ++i) {
      dequantize_row(t, table.view.row(ids[i]), want.data(), cols);
      INFO(dtype_name(t), " row ", i);
      CHECK(std::memcmp(out.row(i), want.data(), want.size() * sizeof(float)) == 0);
    }
    CHECK(out.guards_intact());
  }
  std::vector<float> table(4 * 8), out(8);
  const int32_t bad = 4;
  CHECK_THROWS_AS(ops::get_rows(pool, check::dense_view(table, 4, 8), &bad, 1, check::dense_mat(out, 1, 8)), Error);
}
