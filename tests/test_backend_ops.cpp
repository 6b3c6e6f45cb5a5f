// Backend equivalence: every CPU op (but matmul/get_rows, tested with the quant formats) at
// every SIMD level this CPU has and with 1 and 3 threads, against its plain reference loop
// (backend/cpu/ops_reference.h), on seeded random inputs with odd shapes, padded
// (non-contiguous) rows and sentinel-fenced outputs. Attention is also checked against a
// naive full-score-matrix softmax(QK^T)V written here, and rope against a case by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cpu/ops_reference.h"
#include "util/thread_pool.h"
#include "backend/ops.h"
#include "backend_check.h"
#include "tensor/quant.h"
#include "util/error.h"

using namespace ember;

namespace {

constexpr double kExactNmse = 1e-7;  // elementwise / row ops, f32 vs the double reference

struct Shape {
  int64_t rows, cols;
};
// Odd shapes: rows not a multiple of the thread count, cols not a multiple of 8 or 32.
const Shape kShapes[] = {{5, 7}, {1, 1}, {3, 64}, {7, 33}, {2, 4096}, {13, 100}};

// Runs fn(pool, label) at every SIMD level and with 1 and 3 threads.
template <class Fn>
void for_each_backend(Fn&& fn) {
  for (SimdLevel level : check::simd_levels()) {
    check::ScopedSimdLevel scoped(level);
    for (int threads : {1, 3}) {
      ThreadPool pool(threads);
      fn(pool, std::string(simd_level_name(level)) + " t" + std::to_string(threads));
    }
  }
}

std::string shape_label(const Shape& s) { return std::to_string(s.rows) + "x" + std::to_string(s.cols); }

}  // namespace

TEST_CASE("rms_norm matches the reference, with and without (1 + w), strided and in place") {
  check::Rng rng(11);
  for (const Shape& s : kShapes) {
    const auto x = rng.uniform(static_cast<size_t>(s.rows * s.cols), -3.0f, 3.0f);
    const auto w = rng.uniform(static_cast<size_t>(s.cols), -2.0f, 2.0f);
    for (int variant = 0; variant < 3; ++variant) {
      const float* wp = variant == 0 ? nullptr : w.data();
      const bool one_plus_w = variant == 2;
      std::vector<float> want(x.size());
      ops::reference::rms_norm(check::dense_view(x, s.rows, s.cols), wp, 1e-5f, one_plus_w,
                               check::dense_mat(want, s.rows, s.cols));
      for_each_backend([&](ThreadPool& pool, const std::string& backend) {
        const std::string what = "rms_norm " + shape_label(s) + " variant " + std::to_string(variant) + " " + backend;
        check::StridedF32 in(x, s.rows, s.cols, 3), out(s.rows, s.cols, 5);
        ops::rms_norm(pool, in.view(), wp, 1e-5f, one_plus_w, out.mat());
        check::expect_close(out.dense(), want, kExactNmse, what);
        CHECK(out.guards_intact());
        check::StridedF32 inplace(x, s.rows, s.cols, 2);
        ops::rms_norm(pool, inplace.view(), wp, 1e-5f, one_plus_w, inplace.mat());
        check::expect_close(inplace.dense(), want, kExactNmse, what + " in place");
        CHECK(inplace.guards_intact());
      });
    }
  }
}

TEST_CASE("rms_norm of a known row") {
  // x = (3, 4): mean(x^2) = 12.5, so y = x / sqrt(12.5) * w
  std::vector<float> x{3.0f, 4.0f}, w{2.0f, 0.5f}, y(2);
  ThreadPool pool(1);
  ops::rms_norm(pool, check::dense_view(x, 1, 2), w.data(), 0.0f, false, check::dense_mat(y, 1, 2));
  CHECK(y[0] == doctest::Approx(3.0 / std::sqrt(12.5) * 2.0));
  CHECK(y[1] == doctest::Approx(4.0 / std::sqrt(12.5) * 0.5));
  ops::rms_norm(pool, check::dense_view(x, 1, 2), w.data(), 0.0f, true, check::dense_mat(y, 1, 2));
  CHECK(y[1] == doctest::Approx(4.0 / std::sqrt(12.5) * 1.5));
}

TEST_CASE("rope rotates a hand-computed case in both layouts") {
  // One head of 4, n_rot 4, base 10000, position 1: theta_0 = 1, theta_1 = 10000^(-1/2) = 0.01.
  ThreadPool pool(1);
  const int32_t pos[] = {1};
  RopeParams p{4, false, 10000.0f, 1.0f};
  std::vector<float> x{1.0f, 0.0f, 0.0f, 1.0f};
  ops::rope(pool, check::dense_mat(x, 1, 4), 4, pos, p);
  // adjacent pairs (x0, x1) by 1 rad and (x2, x3) by 0.01 rad
  CHECK(x[0] == doctest::Approx(std::cos(1.0)));
  CHECK(x[1] == doctest::Approx(std::sin(1.0)));
  CHECK(x[2] == doctest::Approx(-std::sin(0.01)));
  CHECK(x[3] == doctest::Approx(std::cos(0.01)));

  p.neox = true;  // pairs (x0, x2) by 1 rad and (x1, x3) by 0.01 rad
  x = {1.0f, 0.0f, 0.0f, 1.0f};
  ops::rope(pool, check::dense_mat(x, 1, 4), 4, pos, p);
  CHECK(x[0] == doctest::Approx(std::cos(1.0)));
  CHECK(x[2] == doctest::Approx(std::sin(1.0)));
  CHECK(x[1] == doctest::Approx(-std::sin(0.01)));
  CHECK(x[3] == doctest::Approx(std::cos(0.01)));

  // partial rotary (n_rot 2 of head_dim 4) with freq_scale 0.5 at position 2: theta_0 = 1,
  // and dims 2, 3 pass through untouched
  const int32_t pos2[] = {2};
  p = RopeParams{2, false, 10000.0f, 0.5f};
  x = {1.0f, 0.0f, 7.0f, -7.0f};
  ops::rope(pool, check::dense_mat(x, 1, 4), 4, pos2, p);
  CHECK(x[0] == doctest::Approx(std::cos(1.0)));
  CHECK(x[1] == doctest::Approx(std::sin(1.0)));
  CHECK(x[2] == 7.0f);
  CHECK(x[3] == -7.0f);
}

TEST_CASE("rope matches the reference: layouts, partial dims, scaling, far and negative positions") {
  check::Rng rng(12);
  struct Case {
    int64_t rows;
    int n_heads, head_dim, n_rot;
    bool neox;
    float base, scale;
  };
  const Case cases[] = {{5, 3, 8, 8, false, 10000.0f, 1.0f},     {7, 2, 64, 64, true, 1000000.0f, 1.0f},
                        {4, 5, 16, 6, false, 10000.0f, 0.25f},   {3, 1, 128, 32, true, 500000.0f, 1.0f},
                        {9, 4, 2, 2, true, 10000.0f, 1.0f}};
  for (const Case& c : cases) {
    const int64_t cols = static_cast<int64_t>(c.n_heads) * c.head_dim;
    const auto x = rng.uniform(static_cast<size_t>(c.rows * cols));
    std::vector<int32_t> pos(static_cast<size_t>(c.rows));
    for (auto& v : pos) v = static_cast<int32_t>(rng.integer(-50, 70000));
    const RopeParams p{c.n_rot, c.neox, c.base, c.scale};
    std::vector<float> want = x;
    ops::reference::rope(check::dense_mat(want, c.rows, cols), c.head_dim, pos.data(), p);
    for_each_backend([&](ThreadPool& pool, const std::string& backend) {
      check::StridedF32 m(x, c.rows, cols, 3);
      ops::rope(pool, m.mat(), c.head_dim, pos.data(), p);
      check::expect_close(m.dense(), want, kExactNmse,
                          "rope " + std::to_string(c.head_dim) + "/" + std::to_string(c.n_rot) +
                              (c.neox ? " neox " : " norm ") + backend);
      CHECK(m.guards_intact());
    });
  }
}

TEST_CASE("rope by p then by -p is the identity (the context shift relies on it)") {
  check::Rng rng(13);
  const auto x = rng.uniform(6 * 32);
  std::vector<float> y = x;
  std::vector<int32_t> pos{3, 100, 4096, 7, 0, 12345}, neg(pos.size());
  std::transform(pos.begin(), pos.end(), neg.begin(), [](int32_t v) { return -v; });
  ThreadPool pool(2);
  const RopeParams p{16, true, 10000.0f, 1.0f};
  ops::rope(pool, check::dense_mat(y, 6, 32), 16, pos.data(), p);
  CHECK(check::nmse(y, x) > 1e-3);
  ops::rope(pool, check::dense_mat(y, 6, 32), 16, neg.data(), p);
  check::expect_close(y, x, 1e-12, "rope round trip");
}

TEST_CASE("rope variants rotate hand-computed cases: frequency factors, YaRN's ramp, mscale") {
  // One head of 4 (pairs 0 and 1), base 10000: unscaled theta_0 = pos, theta_1 = pos / 100.
  ThreadPool pool(1);
  const int32_t pos[] = {2};
  const float factors[] = {2.0f, 4.0f};
  RopeParams p{4, false, 10000.0f, 1.0f};
  p.freq_factors = factors;  // Llama 3 / LongRoPE: theta_i / f_i, so 1 and 0.005
  p.mscale = 0.5f;           // cos and sin halved
  std::vector<float> x{1.0f, 0.0f, 0.0f, 1.0f};
  ops::rope(pool, check::dense_mat(x, 1, 4), 4, pos, p);
  CHECK(x[0] == doctest::Approx(0.5 * std::cos(1.0)));
  CHECK(x[1] == doctest::Approx(0.5 * std::sin(1.0)));
  CHECK(x[2] == doctest::Approx(-0.5 * std::sin(0.005)));
  CHECK(x[3] == doctest::Approx(0.5 * std::cos(0.005)));

  // YaRN, factor 4 (freq_scale 0.25), three pairs (n_rot 6), ramp from pair 0 to pair 2:
  // pair 0 keeps its angle (ramp 1), pair 2 is interpolated (ramp 0: * 0.25), pair 1 is half
  // way (ramp 0.5: * 0.625).
  p = RopeParams{6, true, 10000.0f, 0.25f};
  p.ext_factor = 1.0f;
  p.corr_low = 0.0f;
  p.corr_high = 2.0f;
  x = {1.0f, 1.0f, 1.0f, 0.0f, 0.0f, 0.0f};
  ops::rope(pool, check::dense_mat(x, 1, 6), 6, pos, p);
  const double theta[] = {2.0, 2.0 * 0.625 * std::pow(10000.0, -2.0 / 6), 2.0 * 0.25 * std::pow(10000.0, -4.0 / 6)};
  for (int i = 0; i < 3; ++i) {
    CHECK(x[i] == doctest::Approx(std::cos(theta[i])));
    CHECK(x[i + 3] == doctest::Approx(std::sin(theta[i])));
  }
}

TEST_CASE("rope variants match the reference: factors, YaRN, LongRoPE's mscale, combined") {
  check::Rng rng(15);
  const int head_dim = 64, n_heads = 3, rows = 6;
  std::vector<float> factors(head_dim / 2);
  for (auto& f : factors) f = rng.uniform(1.0f, 31.0f);
  auto variant = [&](int which) {
    RopeParams p{head_dim, which % 2 == 0, 500000.0f, 1.0f};
    if (which == 0 || which == 3) p.freq_factors = factors.data();  // llama3; with YaRN
    if (which == 1 || which == 3) {                                    // YaRN, factor 8
      p.freq_scale = 0.125f;
      p.ext_factor = 1.0f;
      p.corr_low = 9.0f;
      p.corr_high = 23.0f;
      p.mscale = 1.2079f;
    }
    if (which == 2) {  // LongRoPE: factors and an attention factor
      p.freq_factors = factors.data();
      p.mscale = 1.19f;
    }
    return p;
  };
  for (int which = 0; which < 4; ++which) {
    const RopeParams p = variant(which);
    const auto x = rng.uniform(static_cast<size_t>(rows * n_heads * head_dim));
    std::vector<int32_t> pos(rows);
    for (auto& v : pos) v = static_cast<int32_t>(rng.integer(-50, 130000));
    std::vector<float> want = x;
    ops::reference::rope(check::dense_mat(want, rows, n_heads * head_dim), head_dim, pos.data(), p);
    CHECK(check::nmse(want, x) > 1e-3);
    for_each_backend([&](ThreadPool& pool, const std::string& backend) {
      check::StridedF32 m(x, rows, n_heads * head_dim, 3);
      ops::rope(pool, m.mat(), head_dim, pos.data(), p);
      check::expect_close(m.dense(), want, kExactNmse, "rope variant " + std::to_string(which) + " " + backend);
      CHECK(m.guards_intact());
    });
    // Rotations compose with factors and YaRN too (the context shift rotates with mscale 1).
    RopeParams unit = p;
    unit.mscale = 1.0f;
    std::vector<float> y = x;
    std::vector<int32_t> neg(pos.size());
    std::transform(pos.begin(), pos.end(), neg.begin(), [](int32_t v) { return -v; });
    ThreadPool pool(2);
    ops::rope(pool, check::dense_mat(y, rows, n_heads * head_dim), head_dim, pos.data(), unit);
    ops::rope(pool, check::dense_mat(y, rows, n_heads * head_dim), head_dim, neg.data(), unit);
    check::expect_close(y, x, 1e-12, "rope variant round trip");
    // The context shift: a key stored at p (with the magnitude) then rotated by -d with
    // mscale 1 is the key stored at p - d.
    std::vector<float> shifted = x, direct = x;
    std::vector<int32_t> minus_d(pos.size(), -17), at(pos.size());
    std::transform(pos.begin(), pos.end(), at.begin(), [](int32_t v) { return v - 17; });
    ops::rope(pool, check::dense_mat(shifted, rows, n_heads * head_dim), head_dim, pos.data(), p);
    ops::rope(pool, check::dense_mat(shifted, rows, n_heads * head_dim), head_dim, minus_d.data(), unit);
    ops::rope(pool, check::dense_mat(direct, rows, n_heads * head_dim), head_dim, at.data(), p);
    check::expect_close(shifted, direct, 1e-10, "rope variant shift");
  }
}

TEST_CASE("add, mul and scale match the reference, full and broadcast") {
  check::Rng rng(14);
  for (const Shape& s : kShapes) {
    const auto a = rng.uniform(static_cast<size_t>(s.rows * s.cols));
    for (int64_t b_rows : {s.rows, int64_t{1}}) {
      const auto b = rng.uniform(static_cast<size_t>(b_rows * s.cols), -2.0f, 2.0f);
      for (int op = 0; op < 3; ++op) {
        std::vector<float> want = a;
        const F32Mat wm = check::dense_mat(want, s.rows, s.cols);
        const MatView bv = check::dense_view(b, b_rows, s.cols);
        if (op == 0) ops::reference::add(wm, bv);
        if (op == 1) ops::reference::mul(wm, bv);
        if (op == 2) ops::reference::scale(wm, -0.37f);
        for_each_backend([&](ThreadPool& pool, const std::string& backend) {
          check::StridedF32 m(a, s.rows, s.cols, 1);
          check::StridedF32 bs(b, b_rows, s.cols, 4);
          if (op == 0) ops::add(pool, m.mat(), bs.view());
          if (op == 1) ops::mul(pool, m.mat(), bs.view());
          if (op == 2) ops::scale(pool, m.mat(), -0.37f);
          check::expect_close(m.dense(), want, 0.0,
                              "elementwise op " + std::to_string(op) + " " + shape_label(s) + " b rows " +
                                  std::to_string(b_rows) + " " + backend);
          CHECK(m.guards_intact());
        });
      }
    }
  }
  ThreadPool pool(1);
  std::vector<float> a(6), b(4);
  CHECK_THROWS_AS(ops::add(pool, check::dense_mat(a, 2, 3), check::dense_view(b, 2, 2)), Error);
}

TEST_CASE("softmax matches the reference, with masked entries and fully masked rows") {
  check::Rng rng(15);
  for (const Shape& s : kShapes) {
    auto x = rng.uniform(static_cast<size_t>(s.rows * s.cols), -30.0f, 30.0f);
    for (size_t i = 0; i < x.size(); i += 3) x[i] = -INFINITY;
    if (s.rows > 1)
      for (int64_t c = 0; c < s.cols; ++c) x[static_cast<size_t>(s.cols + c)] = -INFINITY;  // row 1 all masked
    std::vector<float> want = x;
    ops::reference::softmax(check::dense_mat(want, s.rows, s.cols));
    for_each_backend([&](ThreadPool& pool, const std::string& backend) {
      check::StridedF32 m(x, s.rows, s.cols, 3);
      ops::softmax(pool, m.mat());
      check::expect_close(m.dense(), want, kExactNmse, "softmax " + shape_label(s) + " " + backend);
      CHECK(m.guards_intact());
      if (s.rows > 1)
        for (int64_t c = 0; c < s.cols; ++c) CHECK(m.row(1)[c] == 0.0f);
    });
  }
}

TEST_CASE("swiglu and geglu match the reference, strided and in place") {
  CHECK(ops::reference::silu(1.0f) == doctest::Approx(1.0 / (1.0 + std::exp(-1.0))));
  CHECK(ops::reference::gelu_tanh(1.0f) == doctest::Approx(0.8411920));  // torch gelu(1, 'tanh')
  check::Rng rng(16);
  for (const Shape& s : kShapes) {
    const size_t n = static_cast<size_t>(s.rows * s.cols);
    auto gate = rng.uniform(n, -12.0f, 12.0f);
    if (n > 2) gate[1] = -100.0f, gate[2] = 100.0f;  // saturated ends must stay finite
    const auto up = rng.uniform(n, -3.0f, 3.0f);
    for (bool gelu : {false, true}) {
      std::vector<float> want(n);
      const auto ref = gelu ? ops::reference::geglu : ops::reference::swiglu;
      ref(check::dense_view(gate, s.rows, s.cols), check::dense_view(up, s.rows, s.cols),
          check::dense_mat(want, s.rows, s.cols));
      for_each_backend([&](ThreadPool& pool, const std::string& backend) {
        const auto op = gelu ? ops::geglu : ops::swiglu;
        const std::string what = std::string(gelu ? "geglu " : "swiglu ") + shape_label(s) + " " + backend;
        check::StridedF32 g(gate, s.rows, s.cols, 2), u(up, s.rows, s.cols, 5), out(s.rows, s.cols, 1);
        op(pool, g.view(), u.view(), out.mat());
        check::expect_close(out.dense(), want, kExactNmse, what);
        CHECK(out.guards_intact());
        op(pool, g.view(), u.view(), g.mat());  // out aliasing gate
        check::expect_close(g.dense(), want, kExactNmse, what + " in place");
        CHECK(g.guards_intact());
      });
    }
  }
}

TEST_CASE("swiglu_oai (gpt-oss's clamped SwiGLU) matches the reference, strided and in place") {
  // Values from the formula in Python: min(g,7) / (1 + exp(-1.702 min(g,7))) * (clamp(u,-7,7) + 1)
  const float a = kSwigluOaiAlpha, l = kSwigluOaiLimit;
  CHECK(ops::reference::swiglu_oai(1.0f, 0.5f, a, l) == doctest::Approx(1.268693648899232));
  CHECK(ops::reference::swiglu_oai(10.0f, -20.0f, a, l) == doctest::Approx(-41.99971876981991));  // both clamped
  CHECK(ops::reference::swiglu_oai(-3.0f, 9.0f, a, l) == doctest::Approx(-0.14457047766228776));  // up clamped
  check::Rng rng(18);
  for (const Shape& s : kShapes) {
    const size_t n = static_cast<size_t>(s.rows * s.cols);
    auto gate = rng.uniform(n, -12.0f, 12.0f);
    if (n > 2) gate[1] = -100.0f, gate[2] = 100.0f;
    const auto up = rng.uniform(n, -10.0f, 10.0f);
    std::vector<float> want(n);
    ops::reference::swiglu_oai(check::dense_view(gate, s.rows, s.cols), check::dense_view(up, s.rows, s.cols),
                               check::dense_mat(want, s.rows, s.cols), a, l);
    for_each_backend([&](ThreadPool& pool, const std::string& backend) {
      const std::string what = "swiglu_oai " + shape_label(s) + " " + backend;
      check::StridedF32 g(gate, s.rows, s.cols, 2), u(up, s.rows, s.cols, 5), out(s.rows, s.cols, 1);
      ops::glu(pool, Activation::SwiGLUOai, g.view(), u.view(), out.mat());
      check::expect_close(out.dense(), want, kExactNmse, what);
      CHECK(out.guards_intact());
      ops::swiglu_oai(pool, g.view(), u.view(), u.mat(), a, l);  // out aliasing up
      check::expect_close(u.dense(), want, kExactNmse, what + " in place");
      CHECK(u.guards_intact());
    });
  }
}

TEST_CASE("store_row writes exactly the reference encoding and nothing beyond the row") {
  check::Rng rng(17);
  for (DType type : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_0}) {
    for (int64_t n : {32, 64, 320}) {
      const auto src = rng.uniform(static_cast<size_t>(n), -4.0f, 4.0f);
      const size_t bytes = dtype_row_bytes(type, n);
      std::vector<uint8_t> want(bytes);
      quantize_row_reference(type, src.data(), want.data(), n);
      check::GuardedBuffer dst(bytes);
      ops::store_row(src.data(), n, type, dst.data());
      INFO(dtype_name(type), " n=", n);
      CHECK(std::equal(want.begin(), want.end(), dst.data()));
      CHECK(dst.guards_intact());
      std::vector<float> back(static_cast<size_t>(n));
      dequantize_row(type, dst.data(), back.data(), n);
      const double bound = type == DType::F32 ? 0.0 : type == DType::F16 ? 1e-6 : type == DType::Q8_0 ? 1e-4 : 1e-2;
      CHECK(check::nmse(back, src) <= bound);
    }
  }
  float row[48] = {};
  uint8_t out[256];
  CHECK_THROWS_AS(ops::store_row(row, 48, DType::Q8_0, out), Error);  // not whole blocks
  CHECK_THROWS_AS(ops::store_row(row, 32, DType::Q4_K, out), Error);  // not a KV cache type
}
