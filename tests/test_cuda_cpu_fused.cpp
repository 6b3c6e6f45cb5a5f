// The fused CUDA kernels (cuda/kernels/fused_*.cuh) run on the CPU through cpu_exec, each
// against the unfused launchers it replaces run in sequence on the same inputs, and against
// the CPU:
//  - rope_store_rows: the rotated k and the whole cache (written rows, skipped rows and
//    untouched rows) bit for bit launch_rope then launch_store_rows; each written row is
//    ops::store_row of the kernel's own rotated row, which is ops::reference::rope's;
//  - quantize_normed: the q8_1 bytes of launch_rms_norm then the matmul's quantisation, bit
//    for bit, in the warp- and block-per-row widths; matmul from them equals matmul from the
//    normalised f32 x;
//  - matmul_glu: NMSE <= 1e-10 from launch_matmul, launch_matmul, launch_glu (fused kernel
//    below 64 tokens or on float weights, the unfused path beyond and for mixed types), from
//    f32 or pre-quantised x, and close to the gated unit of x W^T in double.
// Outputs, caches and scratch are sentinel-guarded, x and outputs strided; one run of each
// kernel in shuffled thread order.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/ops_reference.h"
#include "backend/kv_types.h"
#include "backend/ops.h"
#include "backend_check.h"
#include "cuda/cpu_exec/launch.h"
#include "cuda/kernels/fused_glu.cuh"
#include "cuda/kernels/fused_norm_q8.cuh"
#include "cuda/kernels/fused_rope_store.cuh"
#include "tensor/fp16.h"
#include "tensor/quant.h"
#include "util/error.h"

namespace {

using ember::DType;
using ember::F32Mat;
using ember::MatView;
using ember::RopeParams;
using ember::check::GuardedBuffer;
using ember::check::StridedF32;
using ember::cpu_exec::Order;
using ember::cpu_exec::ScopedSchedule;
namespace check = ember::check;
namespace cu = ember::cuda;
namespace ref = ember::ops::reference;

bool same_bytes(const void* a, const void* b, size_t n) { return std::memcmp(a, b, n) == 0; }
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && same_bytes(a.data(), b.data(), a.size() * sizeof(float));
}

// ---- rope + KV store ----

struct RopeStoreCase {
  DType type;
  int n_heads, head_dim;
  RopeParams p;
};

std::string name(const RopeStoreCase& c) {
  return fmt::format("{} heads {}x{} n_rot {} neox {}", ember::dtype_name(c.type), c.n_heads, c.head_dim, c.p.n_rot,
                     c.p.neox);
}

void check_rope_store(const RopeStoreCase& c, check::Rng& rng) {
  INFO(name(c));
  const int64_t rows = 5, cols = static_cast<int64_t>(c.n_heads) * c.head_dim, cache_rows = 13;
  const size_t row_bytes = ember::dtype_row_bytes(c.type, cols) + 8;  // padded cache rows
  const auto x = rng.uniform(static_cast<size_t>(rows * cols), -2.0f, 2.0f);
  const std::vector<int32_t> pos = {0, 7, 31999, -3, 1234};
  const std::vector<int32_t> dst = {11, 2, -1, 6, 0};  // -1: not stored

  StridedF32 k_unfused(x, rows, cols, 3), k_fused(x, rows, cols, 3);
  GuardedBuffer cache_unfused(cache_rows * row_bytes, 0x5a), cache_fused(cache_rows * row_bytes, 0x5a);
  cu::launch_rope(k_unfused.mat(), c.head_dim, pos.data(), c.p, nullptr);
  cu::launch_store_rows(k_unfused.view(), c.type, cache_unfused.data(), row_bytes, dst.data(), nullptr);
  cu::launch_rope_store_rows(k_fused.mat(), c.head_dim, pos.data(), c.p, c.type, cache_fused.data(), row_bytes,
                             dst.data(), nullptr);
  CHECK(k_fused.guards_intact());
  CHECK(cache_fused.guards_intact());
  const auto rotated = k_fused.dense();
  CHECK(same_bits(rotated, k_unfused.dense()));
  CHECK(same_bytes(cache_fused.data(), cache_unfused.data(), cache_fused.size()));

  auto want = x;
  ref::rope(check::dense_mat(want, rows, cols), c.head_dim, pos.data(), c.p);
  check::expect_close(rotated, want, 1e-10, "rotated k vs ops::reference::rope");
  std::vector<uint8_t> row(row_bytes);
  for (int64_t r = 0; r < rows; ++r) {
    if (dst[r] < 0) continue;
    ember::ops::store_row(rotated.data() + r * cols, cols, c.type, row.data());
    INFO("row ", r);
    CHECK(same_bytes(cache_fused.data() + dst[r] * row_bytes, row.data(), ember::dtype_row_bytes(c.type, cols)));
  }
}

TEST_CASE("cpu_exec: rope_store_rows is rope then store_rows, bit for bit") {
  check::Rng rng(17);
  for (const ember::KVType& kv : ember::kKVTypes)  // every row of the KV type table
    for (bool neox : {false, true}) {
      const DType type = kv.type;
      check_rope_store({type, 3, 96, {96, neox, 10000.0f, 1.0f}}, rng);
      check_rope_store({type, 2, 80, {32, neox, 500000.0f, 0.25f}}, rng);  // dims 32..79 pass through
    }
  check_rope_store({DType::Q8_0, 4, 64, {0, false, 10000.0f, 1.0f}}, rng);  // nothing rotated
  std::vector<float> factors(32);
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + static_cast<float>(i);
  RopeParams yarn{64, true, 10000.0f, 0.25f};  // YaRN with Llama 3 factors and a magnitude
  yarn.freq_factors = factors.data();
  yarn.ext_factor = 1.0f;
  yarn.corr_low = 5.0f;
  yarn.corr_high = 17.0f;
  yarn.mscale = 1.1386f;
  check_rope_store({DType::F16, 2, 64, yarn}, rng);
  check_rope_store({DType::Q8_0, 2, 64, yarn}, rng);
}

TEST_CASE("cpu_exec: rope_store_rows in shuffled thread order") {
  ScopedSchedule schedule({Order::Shuffled, 23});
  check::Rng rng(29);
  check_rope_store({DType::Q4_0, 3, 96, {96, true, 10000.0f, 1.0f}}, rng);
  check_rope_store({DType::F16, 2, 128, {128, false, 10000.0f, 1.0f}}, rng);
}

TEST_CASE("cpu_exec: rope_store_rows refuses what rope or store_rows would") {
  std::vector<float> k(2 * 96);
  std::vector<uint8_t> cache(4096);
  const std::vector<int32_t> pos = {0, 1}, dst = {0, 1};
  auto call = [&](int64_t cols, int head_dim, RopeParams p, DType type) {
    cu::launch_rope_store_rows(F32Mat{k.data(), cols, 2, cols}, head_dim, pos.data(), p, type, cache.data(), 1024,
                               dst.data(), nullptr);
  };
  CHECK_NOTHROW(call(96, 48, {48, false, 10000.0f, 1.0f}, DType::Q8_0));
  CHECK_THROWS_AS(call(96, 48, {48, false, 10000.0f, 1.0f}, DType::Q4_1), ember::Error);  // not a KV type
  CHECK_THROWS_AS(call(80, 40, {40, false, 10000.0f, 1.0f}, DType::Q8_0), ember::Error);  // partial q8_0 block
  CHECK_THROWS_AS(call(96, 48, {47, false, 10000.0f, 1.0f}, DType::F16), ember::Error);   // odd n_rot
  CHECK_THROWS_AS(call(96, 40, {40, false, 10000.0f, 1.0f}, DType::F16), ember::Error);   // partial head
  CHECK_THROWS_AS(cu::launch_rope_store_rows(F32Mat{k.data(), 96, 2, 96}, 48, pos.data(), {48, false, 1e4f, 1.0f},
                                             DType::F32, cache.data(), 100, dst.data(), nullptr),
                  ember::Error);  // cache rows too short
}

// ---- rms_norm into q8_1 ----

struct NormCase {
  int64_t rows, cols;
  int gain;  // 0: no w, 1: w, 2: 1 + w
};

// quantize_normed's bytes and the unfused ones (rms_norm to f32, then the matmul's
// quantisation), and the normalised f32 rows.
struct NormResult {
  std::vector<uint8_t> fused, unfused;
  std::vector<float> normed;
};

NormResult run_norm(const NormCase& c, const std::vector<float>& x, const std::vector<float>& w) {
  const float eps = 1e-5f;
  const float* wp = c.gain == 0 ? nullptr : w.data();
  StridedF32 xs(x, c.rows, c.cols, 3), y(c.rows, c.cols, 5);
  const size_t bytes = cu::quantize_normed_bytes(c.cols, c.rows);
  GuardedBuffer fused(bytes), unfused(bytes);
  cu::launch_rms_norm(xs.view(), wp, eps, c.gain == 2, y.mat(), nullptr);
  cu::launch_quantize_q8_1(y.view(), unfused.as<ember::block_q8_1>(), nullptr);
  cu::launch_quantize_normed(xs.view(), wp, eps, c.gain == 2, fused.data(), nullptr);
  CHECK(fused.guards_intact());
  CHECK(xs.guards_intact());
  return {std::vector<uint8_t>(fused.data(), fused.data() + bytes),
          std::vector<uint8_t>(unfused.data(), unfused.data() + bytes), y.dense()};
}

// The values q8_1 blocks stand for: d * q.
std::vector<float> q8_1_values(const std::vector<uint8_t>& bytes) {
  std::vector<float> out;
  for (size_t b = 0; b < bytes.size(); b += sizeof(ember::block_q8_1)) {
    ember::block_q8_1 blk;
    std::memcpy(&blk, bytes.data() + b, sizeof blk);
    for (int8_t q : blk.qs) out.push_back(ember::fp16_to_f32(blk.d) * static_cast<float>(q));
  }
  return out;
}

void check_norm(const NormCase& c, check::Rng& rng) {
  INFO(fmt::format("{}x{} gain {}", c.rows, c.cols, c.gain));
  const auto x = rng.normal(static_cast<size_t>(c.rows * c.cols), 0.5f, 3.0f);
  const auto w = rng.uniform(static_cast<size_t>(c.cols), -1.5f, 1.5f);
  const NormResult r = run_norm(c, x, w);
  CHECK(r.fused == r.unfused);
  auto want = x;
  ref::rms_norm(check::dense_view(x, c.rows, c.cols), c.gain == 0 ? nullptr : w.data(), 1e-5f, c.gain == 2,
                check::dense_mat(want, c.rows, c.cols));
  check::expect_close(q8_1_values(r.fused), want, 1e-4, "q8_1 values vs ops::reference::rms_norm");
}

TEST_CASE("cpu_exec: quantize_normed gives rms_norm then q8_1's bytes") {
  check::Rng rng(31);
  for (int gain : {0, 1, 2}) {
    check_norm({5, 96, gain}, rng);    // a warp per row, a partial block of rows
    check_norm({3, 1024, gain}, rng);  // the widest warp row
    check_norm({2, 1056, gain}, rng);  // a block per row
  }
  check_norm({1, 2080, 1}, rng);
}

TEST_CASE("cpu_exec: quantize_normed in shuffled thread order") {
  ScopedSchedule schedule({Order::Shuffled, 37});
  check::Rng rng(41);
  check_norm({5, 160, 1}, rng);
  check_norm({2, 1312, 2}, rng);
}

TEST_CASE("cpu_exec: quantize_normed refuses rows of partial blocks") {
  std::vector<float> x(2 * 48);
  GuardedBuffer out(1024);
  CHECK_THROWS_AS(cu::launch_quantize_normed(check::dense_view(x, 2, 48), nullptr, 1e-5f, false, out.data(), nullptr),
                  ember::Error);
  CHECK_THROWS_AS(cu::launch_quantize_normed(check::dense_view(x, 1, 32), nullptr, 1e-5f, false, nullptr, nullptr),
                  ember::Error);
}

// ---- matmul weights ----

// A weight matrix in `type`, rows 4 bytes further apart than packed, and its values.
struct Weights {
  DType type;
  int64_t rows, cols;
  size_t stride;
  GuardedBuffer bytes;
  std::vector<float> deq;

  Weights(DType t, int64_t r, int64_t c, check::Rng& rng)
      : type(t), rows(r), cols(c), stride(ember::dtype_row_bytes(t, c) + 4), bytes(stride * r),
        deq(static_cast<size_t>(r * c)) {
    const auto src = rng.uniform(static_cast<size_t>(r * c), -1.0f, 1.0f);
    for (int64_t j = 0; j < r; ++j) {
      ember::quantize_row_reference(t, src.data() + j * c, bytes.data() + j * stride, c);
      ember::dequantize_row(t, bytes.data() + j * stride, deq.data() + j * c, c);
    }
  }
  MatView view() const { return MatView{type, cols, rows, stride, bytes.data()}; }
};

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// launch_matmul into a strided y; returns y packed.
std::vector<float> run_matmul(const Weights& w, const MatView& x) {
  StridedF32 y(x.rows, w.rows, 5);
  GuardedBuffer scratch(cu::matmul_scratch_bytes(w.view(), x.rows));
  cu::launch_matmul(w.view(), x, y.mat(), scratch.data(), nullptr);
  CHECK(y.guards_intact());
  return y.dense();
}

TEST_CASE("cpu_exec: matmul from quantize_normed's q8_1 equals matmul from the normalised f32 x") {
  check::Rng rng(43);
  struct Case {
    DType type;
    int64_t cols, n;
  };
  // The row kernel and the tensor-core tiles; a norm of a block per row (1056 columns).
  for (auto [type, cols, n] : {Case{DType::Q4_K, 256, 5}, Case{DType::Q4_K, 256, 70}, Case{DType::Q8_0, 1056, 3}}) {
    INFO(fmt::format("{} {} tokens", ember::dtype_name(type), n));
    const Weights w(type, 37, cols, rng);
    const NormResult r = run_norm({n, cols, 1}, rng.normal(static_cast<size_t>(n * cols), 0.0f, 2.0f),
                                  rng.uniform(static_cast<size_t>(cols), 0.5f, 1.5f));
    const auto from_q8 = run_matmul(w, cu::q8_1_view(r.fused.data(), cols, n));
    CHECK(same_bits(from_q8, run_matmul(w, check::dense_view(r.normed, n, cols))));
  }
}

// ---- gate + up + activation ----

std::vector<float> glu_reference(const Weights& wg, const Weights& wu, ember::Activation act, const std::vector<float>& x,
                                 int64_t n) {
  auto project = [&](const Weights& w) {
    std::vector<float> y(static_cast<size_t>(n * w.rows));
    for (int64_t t = 0; t < n; ++t)
      for (int64_t j = 0; j < w.rows; ++j) {
        double s = 0.0;
        for (int64_t i = 0; i < w.cols; ++i)
          s += static_cast<double>(x[t * w.cols + i]) * static_cast<double>(w.deq[j * w.cols + i]);
        y[t * w.rows + j] = static_cast<float>(s);
      }
    return y;
  };
  const auto g = project(wg), u = project(wu);
  std::vector<float> out(g.size());
  const MatView gv = check::dense_view(g, n, wg.rows), uv = check::dense_view(u, n, wg.rows);
  if (act == ember::Activation::SwiGLUOai)
    ref::swiglu_oai(gv, uv, check::dense_mat(out, n, wg.rows), ember::kSwigluOaiAlpha, ember::kSwigluOaiLimit);
  else
    (act == ember::Activation::GELU ? ref::geglu : ref::swiglu)(gv, uv, check::dense_mat(out, n, wg.rows));
  return out;
}

// matmul, matmul, glu through their launchers.
std::vector<float> glu_unfused(const Weights& wg, const Weights& wu, ember::Activation act, const MatView& x) {
  auto gate = run_matmul(wg, x);
  const auto up = run_matmul(wu, x);
  F32Mat out = check::dense_mat(gate, x.rows, wg.rows);
  cu::launch_glu(act, ember::as_view(out), check::dense_view(up, x.rows, wg.rows), out, nullptr);
  return gate;
}

std::vector<float> glu_fused(const Weights& wg, const Weights& wu, ember::Activation act, const MatView& x) {
  StridedF32 out(x.rows, wg.rows, 5);
  GuardedBuffer scratch(cu::matmul_glu_scratch_bytes(wg.view(), x.rows));
  cu::launch_matmul_glu(wg.view(), wu.view(), act, x, out.mat(), scratch.data(), nullptr);
  CHECK(out.guards_intact());
  CHECK(scratch.guards_intact());
  return out.dense();
}

void check_glu(DType gate_type, DType up_type, int64_t rows, int64_t cols, const std::vector<int64_t>& tokens,
               check::Rng& rng) {
  const Weights wg(gate_type, rows, cols, rng), wu(up_type, rows, cols, rng);
  const int64_t max_n = tokens.back();
  const auto x = rng.uniform(static_cast<size_t>(max_n * cols), -2.0f, 2.0f);
  static int calls = 0;  // every activation across the cases
  for (int64_t n : tokens) {
    const ember::Activation act = static_cast<ember::Activation>(calls++ % 3);
    const std::string what = fmt::format("{}/{} {}x{} tokens {} activation {}", ember::dtype_name(gate_type),
                                         ember::dtype_name(up_type), rows, cols, n, static_cast<int>(act));
    const std::vector<float> xn(x.begin(), x.begin() + n * cols);
    StridedF32 xs(xn, n, cols, 3);
    const auto got = glu_fused(wg, wu, act, xs.view());
    check::expect_close(got, glu_unfused(wg, wu, act, xs.view()), 1e-10, what + " vs unfused");
    const bool quant = !is_float(gate_type) || !is_float(up_type);
    check::expect_close(got, glu_reference(wg, wu, act, xn, n), quant ? 1e-3 : 1e-6, what + " vs double");
  }
}

const DType kGluTypes[] = {DType::Q4_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                           DType::Q4_K, DType::Q6_K, DType::F32,  DType::F16,  DType::BF16, DType::MXFP4};

TEST_CASE("cpu_exec: matmul_glu is matmul, matmul, glu for every path") {
  check::Rng rng(47);
  int i = 0;
  for (DType type : kGluTypes) {
    const bool k_quant = type == DType::Q2_K || type == DType::Q3_K || type == DType::Q4_K || type == DType::Q6_K;
    check_glu(type, type, i % 2 ? 45 : 37, k_quant ? 256 : 160, i % 3 == 0 ? std::vector<int64_t>{1, 3, 33}  // 33: two passes of 32
                                                                         : std::vector<int64_t>{1, 3}, rng);
    ++i;
  }
  check_glu(DType::Q4_K, DType::Q4_K, 37, 256, {2, 8, 16}, rng);  // the other tokens-per-pass counts
  check_glu(DType::F16, DType::F16, 37, 96, {2, 8, 16}, rng);
  check_glu(DType::Q4_K, DType::Q4_K, 37, 256, {70}, rng);   // tensor-core tiles, unfused
  check_glu(DType::F16, DType::F16, 37, 96, {70}, rng);      // float weights fuse at any count
  check_glu(DType::Q4_K, DType::Q6_K, 37, 256, {3}, rng);    // mixed types, unfused
  check_glu(DType::F16, DType::Q8_0, 37, 256, {3}, rng);     // a float gate and a quantised up
}

TEST_CASE("cpu_exec: matmul_glu from quantize_normed's q8_1") {
  check::Rng rng(53);
  const Weights wg(DType::Q5_K, 41, 512, rng), wu(DType::Q5_K, 41, 512, rng);
  for (int64_t n : {4, 70}) {
    INFO(n, " tokens");
    const NormResult r = run_norm({n, 512, 1}, rng.normal(static_cast<size_t>(n * 512), 0.0f, 2.0f),
                                  rng.uniform(512, 0.5f, 1.5f));
    const auto from_q8 = glu_fused(wg, wu, ember::Activation::SiLU, cu::q8_1_view(r.fused.data(), 512, n));
    check::expect_close(from_q8, glu_fused(wg, wu, ember::Activation::SiLU, check::dense_view(r.normed, n, 512)), 1e-10, "fused");
    check::expect_close(from_q8, glu_unfused(wg, wu, ember::Activation::SiLU, check::dense_view(r.normed, n, 512)), 1e-10, "unfused");
  }
}

TEST_CASE("cpu_exec: matmul_glu in shuffled thread order") {
  ScopedSchedule schedule({Order::Shuffled, 59});
  check::Rng rng(61);
  check_glu(DType::Q6_K, DType::Q6_K, 37, 256, {5}, rng);
  check_glu(DType::BF16, DType::BF16, 37, 96, {3}, rng);
}

TEST_CASE("cpu_exec: matmul_glu refuses what it cannot compute") {
  check::Rng rng(67);
  const Weights wg(DType::Q4_0, 5, 64, rng), wu(DType::Q4_0, 5, 64, rng), w_short(DType::Q4_0, 4, 64, rng);
  const Weights wf(DType::F16, 5, 64, rng);
  std::vector<float> x(3 * 64), y(3 * 5);
  GuardedBuffer scratch(cu::matmul_glu_scratch_bytes(wg.view(), 3));
  auto call = [&](const MatView& g, const MatView& u, const MatView& xv, void* s) {
    cu::launch_matmul_glu(g, u, ember::Activation::SiLU, xv, check::dense_mat(y, 3, 5), s, nullptr);
  };
  const MatView xv = check::dense_view(x, 3, 64);
  CHECK_NOTHROW(call(wg.view(), wu.view(), xv, scratch.data()));
  CHECK_THROWS_AS(call(wg.view(), w_short.view(), xv, scratch.data()), ember::Error);  // up rows != gate rows
  CHECK_THROWS_AS(call(wg.view(), wu.view(), xv, nullptr), ember::Error);             // no scratch
  CHECK_THROWS_AS(call(wf.view(), wf.view(), cu::q8_1_view(scratch.data(), 64, 3), scratch.data()),
                  ember::Error);  // q8_1 x needs quantised weights
}

}  // namespace
