// The CUDA elementwise, RMSNorm and RoPE kernels (cuda/kernels/elementwise.cuh, rms_norm.cuh,
// rope.cuh) run on the CPU through cuda/cpu_exec by their own launchers, compared with the
// CPU reference ops by NMSE on odd shapes. Inputs and outputs are strided (padding between
// rows holds a sentinel) inside guarded buffers, in-place and aliased cases included; the
// kernels with barriers also run in a shuffled thread order, where a missing barrier shows.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/ops_reference.h"
#include "backend_check.h"
#include "cuda/cpu_exec/launch.h"
#include "cuda/kernels/elementwise.cuh"
#include "cuda/kernels/rms_norm.cuh"
#include "cuda/kernels/rope.cuh"
#include "util/error.h"

namespace {

using ember::F32Mat;
using ember::MatView;
using ember::RopeParams;
using ember::check::StridedF32;
using ember::cpu_exec::Order;
using ember::cpu_exec::ScopedSchedule;
namespace check = ember::check;
namespace ref = ember::ops::reference;
namespace cu = ember::cuda;

struct Shape {
  int64_t rows, cols;
};

std::string name(const char* op, Shape s) { return fmt::format("{} {}x{}", op, s.rows, s.cols); }

// m read as an input: the in-place cases pass one buffer as both input and output.
MatView view_of(const F32Mat& m) {
  return MatView{ember::DType::F32, m.cols, m.rows, static_cast<size_t>(m.stride) * sizeof(float), m.data};
}

// The result of an op run in place on a strided copy of x (cols + pad apart) by `run`,
// after checking that neither the fences nor the padding were touched.
template <class Run>
std::vector<float> in_place(const std::vector<float>& x, Shape s, int64_t pad, Run run) {
  StridedF32 a(x, s.rows, s.cols, pad);
  run(a.mat());
  CHECK(a.guards_intact());
  return a.dense();
}

template <class Run>
std::vector<float> reference(std::vector<float> x, Shape s, Run run) {
  run(check::dense_mat(x, s.rows, s.cols));
  return x;
}

}  // namespace

TEST_CASE("cpu_exec: launch_rms_norm matches the reference (warp and block rows, strided, in place)") {
  check::Rng rng(11);
  // 1..1024 columns: a warp per row (37 rows: a partial last block); 1025+: a block per row.
  const Shape shapes[] = {{1, 1}, {37, 7}, {9, 64}, {5, 128}, {3, 256}, {2, 1024}, {3, 1025}, {2, 3001}};
  for (const Shape& s : shapes) {
    const auto x = rng.uniform(static_cast<size_t>(s.rows * s.cols), -3.0f, 3.0f);
    const auto w = rng.uniform(static_cast<size_t>(s.cols), -1.0f, 1.0f);
    for (int mode = 0; mode < 3; ++mode) {  // no weight, w, 1 + w
      const float* wp = mode == 0 ? nullptr : w.data();
      const bool one_plus_w = mode == 2;
      std::vector<float> want(x.size());
      ref::rms_norm(check::dense_view(x, s.rows, s.cols), wp, 1e-5f, one_plus_w, check::dense_mat(want, s.rows, s.cols));
      const std::string what = fmt::format("{} weights {}", name("rms_norm", s), mode);

      StridedF32 in(x, s.rows, s.cols, 3), out(s.rows, s.cols, 5);
      cu::launch_rms_norm(in.view(), wp, 1e-5f, one_plus_w, out.mat(), nullptr);
      CHECK(out.guards_intact());
      check::expect_close(out.dense(), want, 1e-7, what);

      ScopedSchedule shuffled({Order::Shuffled, static_cast<uint64_t>(s.cols + mode)});
      const auto got = in_place(x, s, 2, [&](F32Mat a) {
        cu::launch_rms_norm(view_of(a), wp, 1e-5f, one_plus_w, a, nullptr);
      });
      check::expect_close(got, want, 1e-7, what + " in place, shuffled");
    }
  }
}

TEST_CASE("cpu_exec: launch_rope matches the reference (pairs and halves, partial n_rot)") {
  check::Rng rng(12);
  struct Case {
    int64_t rows;
    int head_dim, n_heads, n_rot;
    float base, scale;
  };
  const Case cases[] = {
      {3, 64, 3, 64, 10000.0f, 1.0f},   // full rotation
      {5, 128, 2, 64, 1e6f, 0.3f},      // partial, scaled positions (0.3: pos * scale must be double)
      {3, 80, 3, 40, 10000.0f, 1.0f},   // 2i / 40 is inexact in float: the exponent must be double
      {2, 6, 5, 4, 10000.0f, 1.0f},     // tiny heads, 10 pairs: fewer than a warp
      {4, 256, 3, 256, 1e6f, 1.0f},     // 384 pairs: more than one pass of the block
      {2, 10, 1, 0, 10000.0f, 1.0f},    // nothing rotated
  };
  for (const Case& c : cases)
    for (bool neox : {false, true}) {
      const Shape s{c.rows, static_cast<int64_t>(c.head_dim) * c.n_heads};
      const auto x = rng.uniform(static_cast<size_t>(s.rows * s.cols), -2.0f, 2.0f);
      std::vector<int32_t> pos(static_cast<size_t>(s.rows));
      for (size_t t = 0; t < pos.size(); ++t) pos[t] = static_cast<int32_t>(rng.integer(-40000, 40000));
      pos[0] = 0;
      const RopeParams p{c.n_rot, neox, c.base, c.scale};
      const auto want = reference(x, s, [&](F32Mat m) { ref::rope(m, c.head_dim, pos.data(), p); });
      const std::string what = fmt::format("{} head_dim {} n_rot {} neox {}", name("rope", s), c.head_dim, c.n_rot, neox);
      for (Order order : {Order::RoundRobin, Order::Shuffled}) {
        ScopedSchedule schedule({order, static_cast<uint64_t>(c.head_dim)});
        const auto got = in_place(x, s, 3, [&](F32Mat m) { cu::launch_rope(m, c.head_dim, pos.data(), p, nullptr); });
        // The same float/double steps as the CPU: agreement to the last bits, not just 1e-7.
        check::expect_close(got, want, 1e-10, what + fmt::format(" order {}", static_cast<int>(order)));
      }
    }
}

TEST_CASE("cpu_exec: launch_rope variants match the reference (factors, YaRN, LongRoPE's mscale)") {
  check::Rng rng(19);
  const int head_dim = 128, n_heads = 3;
  const Shape s{4, head_dim * n_heads};
  std::vector<float> factors(head_dim / 2);
  for (auto& f : factors) f = rng.uniform(1.0f, 40.0f);
  for (int which = 0; which < 3; ++which)
    for (bool neox : {false, true}) {
      RopeParams p{head_dim, neox, 500000.0f, 1.0f};
      if (which != 1) p.freq_factors = factors.data();  // host memory is the device's in cpu_exec
      if (which == 2) p.mscale = 1.19f;                 // LongRoPE
      if (which == 1) {                                 // YaRN factor 32, ggml's corr dims for 4096
        p.freq_scale = 1.0f / 32.0f;
        p.ext_factor = 1.0f;
        p.corr_low = 20.0f;
        p.corr_high = 46.0f;
        p.mscale = 1.3466f;
      }
      const auto x = rng.uniform(static_cast<size_t>(s.rows * s.cols), -2.0f, 2.0f);
      std::vector<int32_t> pos{0, 77, -3000, 120000};
      const auto want = reference(x, s, [&](F32Mat m) { ref::rope(m, head_dim, pos.data(), p); });
      const auto got = in_place(x, s, 3, [&](F32Mat m) { cu::launch_rope(m, head_dim, pos.data(), p, nullptr); });
      check::expect_close(got, want, 1e-10, fmt::format("rope variant {} neox {}", which, neox));
    }
}

TEST_CASE("cpu_exec: launch_add and launch_scale match the reference exactly (strided, broadcast)") {
  check::Rng rng(13);
  const Shape shapes[] = {{1, 1}, {3, 7}, {4, 300}, {2, 1031}};
  ScopedSchedule shuffled({Order::Shuffled, 13});
  for (const Shape& s : shapes) {
    const auto a = rng.uniform(static_cast<size_t>(s.rows * s.cols), -2.0f, 2.0f);
    for (int64_t b_rows : {s.rows, int64_t{1}}) {
      const auto b = rng.uniform(static_cast<size_t>(b_rows * s.cols), -2.0f, 2.0f);
      StridedF32 bs(b, b_rows, s.cols, 4);
      const auto want = reference(a, s, [&](F32Mat m) { ref::add(m, check::dense_view(b, b_rows, s.cols)); });
      const auto got = in_place(a, s, 1, [&](F32Mat m) { cu::launch_add(m, bs.view(), nullptr); });
      check::expect_close(got, want, 1e-10, name("add", s) + fmt::format(" b rows {}", b_rows));
      CHECK(got == want);  // one rounding per element on both sides
    }
    const auto want = reference(a, s, [&](F32Mat m) { ref::scale(m, -1.7f); });
    const auto got = in_place(a, s, 2, [&](F32Mat m) { cu::launch_scale(m, -1.7f, nullptr); });
    check::expect_close(got, want, 1e-10, name("scale", s));
    CHECK(got == want);
  }
}

TEST_CASE("cpu_exec: launch_softcap matches cap * tanh(x / cap)") {
  check::Rng rng(14);
  const Shape s{3, 1001};
  const float cap = 30.0f;
  const auto x = rng.uniform(static_cast<size_t>(s.rows * s.cols), -120.0f, 120.0f);
  std::vector<float> want(x);
  for (float& v : want) v = cap * std::tanh(v / cap);  // as model/layers.cpp caps logits
  const auto got = in_place(x, s, 3, [&](F32Mat m) { cu::launch_softcap(m, cap, nullptr); });
  check::expect_close(got, want, 1e-7, name("softcap", s));
}

// The reference of each activation (swiglu_oai with gpt-oss's constants).
void reference_glu(ember::Activation act, const MatView& gate, const MatView& up, F32Mat out) {
  if (act == ember::Activation::SwiGLUOai)
    return ref::swiglu_oai(gate, up, out, ember::kSwigluOaiAlpha, ember::kSwigluOaiLimit);
  (act == ember::Activation::GELU ? ref::geglu : ref::swiglu)(gate, up, out);
}

TEST_CASE("cpu_exec: launch_glu matches swiglu / geglu / swiglu_oai (strided, out aliasing gate or up)") {
  check::Rng rng(15);
  const Shape shapes[] = {{1, 5}, {3, 257}, {2, 1100}};
  for (const Shape& s : shapes)
    for (ember::Activation act : {ember::Activation::SiLU, ember::Activation::GELU, ember::Activation::SwiGLUOai}) {
      const size_t n = static_cast<size_t>(s.rows * s.cols);
      const auto gate = rng.uniform(n, -9.0f, 9.0f);  // past swiglu_oai's limit of 7 on both sides
      const auto up = rng.uniform(n, -9.0f, 9.0f);
      std::vector<float> want(n);
      reference_glu(act, check::dense_view(gate, s.rows, s.cols), check::dense_view(up, s.rows, s.cols),
                    check::dense_mat(want, s.rows, s.cols));
      const bool gelu = act == ember::Activation::GELU;
      const std::string what = name(gelu ? "geglu" : act == ember::Activation::SiLU ? "swiglu" : "swiglu_oai", s);

      StridedF32 g(gate, s.rows, s.cols, 1), u(up, s.rows, s.cols, 6), out(s.rows, s.cols, 3);
      cu::launch_glu(act, g.view(), u.view(), out.mat(), nullptr);
      CHECK(out.guards_intact());
      check::expect_close(out.dense(), want, 1e-7, what);

      // In place: the output over gate, then over up (each with the other input strided apart).
      ScopedSchedule shuffled({Order::Shuffled, static_cast<uint64_t>(s.cols)});
      const auto over_gate = in_place(gate, s, 2, [&](F32Mat m) {
        cu::launch_glu(act, view_of(m), u.view(), m, nullptr);
      });
      check::expect_close(over_gate, want, 1e-7, what + " out = gate");
      const auto over_up = in_place(up, s, 2, [&](F32Mat m) {
        cu::launch_glu(act, g.view(), view_of(m), m, nullptr);
      });
      check::expect_close(over_up, want, 1e-7, what + " out = up");
    }
}

TEST_CASE("cpu_exec: the elementwise launchers reject bad arguments and skip empty ones") {
  std::vector<float> buf(64, 1.0f);
  const F32Mat a{buf.data(), 8, 4, 8};
  const MatView a_view = check::dense_view(buf, 4, 8);
  int32_t pos[4] = {0, 1, 2, 3};
  CHECK_THROWS_AS(cu::launch_add(a, check::dense_view(buf, 2, 8), nullptr), ember::Error);  // 2 rows of 4
  CHECK_THROWS_AS(cu::launch_add(a, check::dense_view(buf, 4, 7), nullptr), ember::Error);
  MatView f16 = a_view;
  f16.type = ember::DType::F16;
  CHECK_THROWS_AS(cu::launch_glu(ember::Activation::SiLU, f16, a_view, a, nullptr), ember::Error);
  MatView odd_stride = a_view;
  odd_stride.row_stride = 8 * sizeof(float) + 2;  // rows not float-aligned
  CHECK_THROWS_AS(cu::launch_rms_norm(odd_stride, nullptr, 1e-6f, false, a, nullptr), ember::Error);
  CHECK_THROWS_AS(cu::launch_rms_norm(a_view, nullptr, 1e-6f, false, F32Mat{buf.data(), 8, 3, 8}, nullptr),
                  ember::Error);
  CHECK_THROWS_AS(cu::launch_rope(a, 3, pos, RopeParams{2, false}, nullptr), ember::Error);   // 8 % 3
  CHECK_THROWS_AS(cu::launch_rope(a, 4, pos, RopeParams{3, false}, nullptr), ember::Error);   // odd n_rot
  CHECK_THROWS_AS(cu::launch_rope(a, 4, pos, RopeParams{6, false}, nullptr), ember::Error);   // n_rot > head_dim
  CHECK_THROWS_AS(cu::launch_rope(a, 4, nullptr, RopeParams{4, false}, nullptr), ember::Error);
  CHECK_THROWS_AS(cu::launch_softcap(a, 0.0f, nullptr), ember::Error);
  // Empty views launch nothing (a zero grid would be an invalid launch).
  cu::launch_scale(F32Mat{buf.data(), 8, 0, 8}, 2.0f, nullptr);
  cu::launch_rms_norm(check::dense_view(buf, 0, 8), nullptr, 1e-6f, false, F32Mat{buf.data(), 8, 0, 8}, nullptr);
  CHECK(buf[0] == 1.0f);
}
