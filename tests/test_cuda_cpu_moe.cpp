// The CUDA mixture-of-experts kernels (cuda/kernels/moe.cuh, matmul_id.cuh) run on the CPU
// through cpu_exec, through their own launchers, against the CPU ops: ops::moe_route (every
// gating variant, ties, the selection-only bias, renormalisation and scale: same ids, same
// weights), ops::matmul_id (float and quantised experts, x per token and per slot, odd
// shapes; NMSE as the dense matmul's tests) and ops::moe_combine. A row's expert output is
// bitwise the same computed alone (the one-token path) and in any batch (the grouped path).
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "backend/ops.h"
#include "backend_check.h"
#include "cuda/cpu_exec/launch.h"
#include "cuda/kernels/matmul_id.cuh"
#include "cuda/kernels/moe.cuh"
#include "tensor/quant.h"
#include "util/thread_pool.h"

namespace {

using ember::DType;
using ember::F32Mat;
using ember::MatView;
using ember::MoeGating;
using ember::MoeRouting;
namespace check = ember::check;

// Router logits with ties: every third value repeats its neighbour's.
std::vector<float> tied_logits(check::Rng& rng, int64_t tokens, int n_expert) {
  auto l = rng.normal(static_cast<size_t>(tokens * n_expert));
  for (size_t i = 2; i < l.size(); i += 3) l[i] = l[i - 1];
  for (int64_t t = 0; t < tokens; ++t) l[t * n_expert + n_expert - 1] = l[t * n_expert];  // a tie across the row
  return l;
}

void check_route(const MoeRouting& r, const std::vector<float>& logits, int64_t tokens, const std::string& what) {
  const MatView lv = check::dense_view(logits, tokens, r.n_expert);
  const size_t n = static_cast<size_t>(tokens * r.n_used);
  std::vector<int32_t> ids_cpu(n), ids_dev(n, -7);
  std::vector<float> w_cpu(n), w_dev(n);
  ember::ops::moe_route(lv, r, ids_cpu.data(), w_cpu.data());
  ember::cuda::launch_moe_route(lv, r, ids_dev.data(), w_dev.data(), nullptr);
  CAPTURE(what);
  CHECK(ids_dev == ids_cpu);
  for (size_t i = 0; i < n; ++i) CHECK(w_dev[i] == doctest::Approx(w_cpu[i]).epsilon(1e-6));
}

struct Experts {
  DType type;
  int n_expert;
  int64_t rows, cols;
  size_t row_bytes;
  check::GuardedBuffer bytes;  // expert e at e * rows * row_bytes, as the device store keeps them

  Experts(DType t, int n, int64_t r, int64_t c, check::Rng& rng)
      : type(t), n_expert(n), rows(r), cols(c), row_bytes(ember::dtype_row_bytes(t, c)),
        bytes(static_cast<size_t>(n * r) * row_bytes) {
    const auto src = rng.uniform(static_cast<size_t>(n * r * c), -1.0f, 1.0f);
    for (int64_t j = 0; j < n * r; ++j)
      ember::quantize_row_reference(t, src.data() + j * c, bytes.data() + j * row_bytes, c);
  }
  std::vector<MatView> views() const {
    std::vector<MatView> v;
    for (int e = 0; e < n_expert; ++e)
      v.push_back(MatView{type, cols, rows, row_bytes, bytes.data() + static_cast<size_t>(e * rows) * row_bytes});
    return v;
  }
  ember::cuda::ExpertSet set() const { return {views()[0], static_cast<size_t>(rows) * row_bytes, n_expert}; }
};

// launch_matmul_id on a strided y with a guarded scratch; y packed.
std::vector<float> run_matmul_id(const Experts& w, const MatView& x, const int32_t* ids, int n_used,
                                 int64_t n_slots) {
  check::StridedF32 y(n_slots, w.rows, 3);
  const auto set = w.set();
  check::GuardedBuffer scratch(ember::cuda::matmul_id_scratch_bytes(set, x.rows, n_slots));
  ember::cuda::launch_matmul_id(set, x, ids, n_used, y.mat(), scratch.data(), nullptr);
  CHECK(y.guards_intact());
  CHECK(scratch.guards_intact());
  return y.dense();
}

std::vector<int32_t> random_ids(check::Rng& rng, int64_t tokens, int n_used, int n_expert) {
  std::vector<int32_t> ids;
  for (int64_t t = 0; t < tokens; ++t)
    for (int j = 0; j < n_used; ++j) ids.push_back(static_cast<int32_t>(rng.integer(0, n_expert - 1)));
  return ids;
}

void check_matmul_id(DType type, int64_t rows, int64_t cols, check::Rng& rng) {
  constexpr int kExperts = 5, kUsed = 2;
  const Experts w(type, kExperts, rows, cols, rng);
  const std::vector<MatView> views = w.views();
  ember::ThreadPool pool(1);
  const bool quant = type != DType::F32 && type != DType::F16 && type != DType::BF16;
  for (int64_t tokens : {1, 3, 7}) {
    for (bool per_slot : {false, true}) {
      const int64_t n_slots = tokens * kUsed, x_rows = per_slot ? n_slots : tokens;
      const auto x = rng.uniform(static_cast<size_t>(x_rows * cols), -2.0f, 2.0f);
      const auto ids = random_ids(rng, tokens, kUsed, kExperts);
      std::vector<float> want(static_cast<size_t>(n_slots * rows));
      ember::ops::matmul_id(pool, {{views, check::dense_mat(want, n_slots, rows)}}, check::dense_view(x, x_rows, cols),
                            ids.data(), kUsed);
      check::StridedF32 xs(x, x_rows, cols, 1);
      const auto got = run_matmul_id(w, xs.view(), ids.data(), kUsed, n_slots);
      const std::string what = fmt::format("{} {}x{} tokens {} per_slot {}", ember::dtype_name(type), rows, cols,
                                           tokens, per_slot);
      // The CPU's BF16 kernels round x to bf16 too (the device keeps it f32).
      check::expect_close(got, want, quant ? 5e-4 : type == DType::BF16 ? 1e-5 : 1e-9, what);
    }
  }
}

}  // namespace

TEST_CASE("cpu_exec: moe_route gives ops::moe_route's ids and weights for every gating variant") {
  check::Rng rng(29);
  const float bias[9] = {0.3f, -0.1f, 0.0f, 0.2f, 0.2f, -0.4f, 0.1f, 0.0f, 0.05f};
  const int64_t tokens = 11;
  const auto logits = tied_logits(rng, tokens, 9);
  for (MoeGating g : {MoeGating::Softmax, MoeGating::Sigmoid, MoeGating::SoftmaxSelected})
    for (bool norm : {false, true})
      for (float scale : {0.0f, 2.5f})
        for (const float* b : {static_cast<const float*>(nullptr), bias})
          for (int k : {1, 3, 9}) {
            const MoeRouting r{.n_expert = 9, .n_used = k, .gating = g, .norm_weights = norm, .weights_scale = scale,
                               .selection_bias = b};
            check_route(r, logits, tokens,
                        fmt::format("gating {} norm {} scale {} bias {} k {}", static_cast<int>(g), norm, scale,
                                    b != nullptr, k));
          }
  // All equal: the lowest ids win.
  const std::vector<float> flat(static_cast<size_t>(3 * 9), 0.5f);
  check_route(MoeRouting{.n_expert = 9, .n_used = 4, .gating = MoeGating::Softmax}, flat, 3, "flat");
}

TEST_CASE("cpu_exec: moe_route refuses logits that do not match the experts") {
  std::vector<float> l(16, 0.0f);
  std::vector<int32_t> ids(8);
  std::vector<float> w(8);
  const MoeRouting r{.n_expert = 8, .n_used = 9};
  CHECK_THROWS_AS(ember::cuda::launch_moe_route(check::dense_view(l, 2, 8), r, ids.data(), w.data(), nullptr),
                  ember::Error);
}

TEST_CASE("cpu_exec: matmul_id matches ops::matmul_id for float and quantised experts") {
  check::Rng rng(31);
  check_matmul_id(DType::F32, 37, 64, rng);
  check_matmul_id(DType::F16, 13, 96, rng);
  check_matmul_id(DType::BF16, 13, 32, rng);
  check_matmul_id(DType::Q8_0, 37, 96, rng);
  check_matmul_id(DType::Q4_0, 13, 64, rng);
  check_matmul_id(DType::Q4_K, 13, 256, rng);
  check_matmul_id(DType::Q6_K, 37, 256, rng);
  check_matmul_id(DType::MXFP4, 13, 96, rng);
}

TEST_CASE("cpu_exec: a row's matmul_id result is bitwise the same alone and in any batch") {
  check::Rng rng(37);
  constexpr int kExperts = 6, kUsed = 3;
  for (DType type : {DType::Q4_K, DType::F32}) {
    const Experts w(type, kExperts, 21, 256, rng);
    const int64_t tokens = 9;
    const auto x = rng.uniform(static_cast<size_t>(tokens * 256), -2.0f, 2.0f);
    auto ids = random_ids(rng, tokens, kUsed, kExperts);
    for (int j = 0; j < kUsed; ++j) ids[3 * kUsed + j] = ids[j];  // tokens sharing experts
    const MatView xv = check::dense_view(x, tokens, 256);
    const auto batch = run_matmul_id(w, xv, ids.data(), kUsed, tokens * kUsed);
    for (int64_t t = 0; t < tokens; ++t) {
      const MatView one = check::dense_view(x.data() + t * 256, 1, 256);
      const auto alone = run_matmul_id(w, one, ids.data() + t * kUsed, kUsed, kUsed);  // the one-token path
      CAPTURE(t);
      CHECK(std::memcmp(alone.data(), batch.data() + t * kUsed * 21, alone.size() * sizeof(float)) == 0);
    }
    // A sub-batch of tokens 2..6 gives those tokens' rows bitwise too.
    const MatView sub = check::dense_view(x.data() + 2 * 256, 5, 256);
    const auto part = run_matmul_id(w, sub, ids.data() + 2 * kUsed, kUsed, 5 * kUsed);
    CHECK(std::memcmp(part.data(), batch.data() + 2 * kUsed * 21, part.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("cpu_exec: moe_combine matches ops::moe_combine with and without the gated shared expert") {
  check::Rng rng(41);
  ember::ThreadPool pool(1);
  constexpr int kUsed = 3;
  const int64_t tokens = 5, cols = 70;
  const auto experts = rng.uniform(static_cast<size_t>(tokens * kUsed * cols));
  const auto weights = rng.uniform(static_cast<size_t>(tokens * kUsed), 0.0f, 1.0f);
  const auto shared = rng.uniform(static_cast<size_t>(tokens * cols));
  const auto gate = rng.normal(static_cast<size_t>(tokens));
  const MatView ev = check::dense_view(experts, tokens * kUsed, cols), sv = check::dense_view(shared, tokens, cols),
                gv = check::dense_view(gate, tokens, 1);
  const std::pair<MatView, MatView> cases[] = {{MatView{}, MatView{}}, {sv, MatView{}}, {sv, gv}};
  for (const auto& [s, g] : cases) {
    std::vector<float> want(static_cast<size_t>(tokens * cols));
    ember::ops::moe_combine(pool, ev, weights.data(), kUsed, s, g, check::dense_mat(want, tokens, cols));
    check::StridedF32 got(tokens, cols, 2);
    ember::cuda::launch_moe_combine(ev, weights.data(), kUsed, s, g, got.mat(), nullptr);
    CHECK(got.guards_intact());
    check::expect_close(got.dense(), want, 1e-12, fmt::format("shared {} gate {}", s.data != nullptr, g.data != nullptr));
  }
}

TEST_CASE("cpu_exec: matmul_id over experts with more rows than one pass holds") {
  check::Rng rng(43);
  constexpr int kExperts = 3, kUsed = 2;
  const int64_t tokens = 40, cols = 64, rows = 11;  // ~27 slots per expert: two passes of 16
  const Experts w(DType::Q8_0, kExperts, rows, cols, rng);
  const std::vector<MatView> views = w.views();
  const auto x = rng.uniform(static_cast<size_t>(tokens * cols), -2.0f, 2.0f);
  const auto ids = random_ids(rng, tokens, kUsed, kExperts);
  ember::ThreadPool pool(1);
  std::vector<float> want(static_cast<size_t>(tokens * kUsed * rows));
  ember::ops::matmul_id(pool, {{views, check::dense_mat(want, tokens * kUsed, rows)}},
                        check::dense_view(x, tokens, cols), ids.data(), kUsed);
  const auto got = run_matmul_id(w, check::dense_view(x, tokens, cols), ids.data(), kUsed, tokens * kUsed);
  check::expect_close(got, want, 5e-4, "40 tokens");
  for (int64_t t : {0, 17, 39}) {
    const auto alone = run_matmul_id(w, check::dense_view(x.data() + t * cols, 1, cols), ids.data() + t * kUsed, kUsed,
                                     kUsed);
    CAPTURE(t);
    CHECK(std::memcmp(alone.data(), got.data() + t * kUsed * rows, alone.size() * sizeof(float)) == 0);
  }
}
