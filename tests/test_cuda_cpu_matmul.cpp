// The CUDA matmul kernels (cuda/kernels/matmul*.cuh) run on the CPU through cpu_exec, through
// their own launcher, against y = x W^T computed in double from ember::dequantize_row's
// weights. Quantised weights are checked twice: against the f32 activations (NMSE <= 5e-4,
// the kernels quantise x to q8_1) and against x rounded to q8_1 on the host exactly as the
// kernel does (NMSE <= 1e-9: only float summation order differs, so a wrong scale, nibble
// or offset on any sub-block shows; 1e-6 where the offset multiplies the block's fp16 sum s,
// whose rounding the host does not copy). Float weights: f32 activations, NMSE <= 1e-6.
// Outputs and scratch are sentinel-guarded, x and y strided, row counts odd.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend_check.h"
#include "cuda/cpu_exec/launch.h"
#include "cuda/kernels/matmul.cuh"
#include "tensor/fp16.h"
#include "tensor/quant.h"

namespace {

using ember::DType;
using ember::MatView;
using ember::cpu_exec::Order;
using ember::cpu_exec::ScopedSchedule;
namespace check = ember::check;

const DType kQuantTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                             DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::MXFP4};
const DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};
const int64_t kTokenCounts[] = {1, 3, 17, 64, 70};

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// A weight matrix in `type`, rows kPad bytes further apart than packed, and its dequantised
// values (what the kernel must multiply by).
struct Weights {
  static constexpr size_t kPad = 4;
  DType type;
  int64_t rows, cols;
  size_t stride;
  check::GuardedBuffer bytes;
  std::vector<float> deq;

  Weights(DType t, int64_t r, int64_t c, check::Rng& rng)
      : type(t), rows(r), cols(c), stride(ember::dtype_row_bytes(t, c) + kPad), bytes(stride * r),
        deq(static_cast<size_t>(r * c)) {
    const auto src = rng.uniform(static_cast<size_t>(r * c), -1.0f, 1.0f);
    for (int64_t j = 0; j < r; ++j) {
      ember::quantize_row_reference(t, src.data() + j * c, bytes.data() + j * stride, c);
      ember::dequantize_row(t, bytes.data() + j * stride, deq.data() + j * c, c);
    }
  }
  MatView view() const { return MatView{type, cols, rows, stride, bytes.data()}; }
};

// x rounded to q8_1 as quantize_q8_1_kernel does: d = fp16(amax / 127), q = rint(x / d).
std::vector<float> round_q8_1(const std::vector<float>& x) {
  std::vector<float> out(x.size());
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0.0f;
    for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = ember::fp16_to_f32(ember::f32_to_fp16(amax / 127.0f));
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    for (size_t i = b; i < b + 32; ++i) out[i] = d * std::clamp(std::rint(x[i] * id), -127.0f, 127.0f);
  }
  return out;
}

// y[t][j] = sum_i x[t][i] * W[j][i] in double.
std::vector<float> reference(const Weights& w, const std::vector<float>& x, int64_t n_tokens) {
  std::vector<float> y(static_cast<size_t>(n_tokens * w.rows));
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t j = 0; j < w.rows; ++j) {
      double s = 0.0;
      for (int64_t i = 0; i < w.cols; ++i)
        s += static_cast<double>(x[t * w.cols + i]) * static_cast<double>(w.deq[j * w.cols + i]);
      y[t * w.rows + j] = static_cast<float>(s);
    }
  return y;
}

// launch_matmul on strided x and y with a guarded scratch; returns y packed.
std::vector<float> run_matmul(const Weights& w, const std::vector<float>& x, int64_t n_tokens) {
  const std::vector<float> x_used(x.begin(), x.begin() + n_tokens * w.cols);
  check::StridedF32 xs(x_used, n_tokens, w.cols, 3), ys(n_tokens, w.rows, 5);
  check::GuardedBuffer scratch(ember::cuda::matmul_scratch_bytes(w.view(), n_tokens));
  ember::cuda::launch_matmul(w.view(), xs.view(), ys.mat(), scratch.data(), nullptr);
  CHECK(ys.guards_intact());
  CHECK(scratch.guards_intact());
  return ys.dense();
}

void check_type(DType type, int64_t rows, int64_t cols, check::Rng& rng) {
  const Weights w(type, rows, cols, rng);
  const auto x = rng.uniform(static_cast<size_t>(70 * cols), -2.0f, 2.0f);
  const auto xq = round_q8_1(x);
  for (int64_t n : kTokenCounts) {
    const std::string what = fmt::format("{} {}x{} tokens {}", ember::dtype_name(type), rows, cols, n);
    const auto got = run_matmul(w, x, n);
    if (is_float(type)) {
      check::expect_close(got, reference(w, x, n), 1e-6, what);
    } else {
      check::expect_close(got, reference(w, x, n), 5e-4, what + " vs f32 x");
      const bool uses_s = type != DType::Q8_0 && type != DType::Q2_K && type != DType::Q3_K && type != DType::Q6_K &&
                          type != DType::MXFP4;
      check::expect_close(got, reference(w, xq, n), uses_s ? 1e-6 : 1e-9, what + " vs q8_1 x");
    }
  }
}

}  // namespace

TEST_CASE("cpu_exec: the CUDA matmul matches x W^T for every weight type and token count") {
  check::Rng rng(7);
  const int64_t cols[] = {256, 512, 1024};
  int i = 0;
  for (DType type : kQuantTypes) {
    check_type(type, i % 2 ? 129 : 37, cols[i % 3], rng);
    ++i;
  }
  for (DType type : kFloatTypes) {
    check_type(type, i % 2 ? 129 : 37, cols[i % 3], rng);
    ++i;
  }
  check_type(DType::MXFP4, 37, 96, rng);  // 17-byte blocks, rows at odd addresses
}

TEST_CASE("cpu_exec: the CUDA matmul in shuffled thread order") {
  ScopedSchedule schedule({Order::Shuffled, 11});
  check::Rng rng(3);
  check_type(DType::Q6_K, 37, 512, rng);
  check_type(DType::F16, 37, 96, rng);   // cols not a multiple of the warp
  check_type(DType::Q5_1, 37, 224, rng);  // 7 sub-blocks: a partial k-tile in the tensor-core path
}

TEST_CASE("cpu_exec: a token's matmul result does not depend on the batch around it") {
  check::Rng rng(5);
  for (DType type : {DType::Q4_K, DType::Q8_0, DType::BF16}) {
    const Weights w(type, 37, 512, rng);
    const auto x = rng.uniform(static_cast<size_t>(70 * 512), -2.0f, 2.0f);
    for (int64_t n : {17, 70}) {
      const auto batch = run_matmul(w, x, n);
      for (int64_t t : {int64_t{0}, n / 2, n - 1}) {
        const std::vector<float> token(x.begin() + t * 512, x.begin() + (t + 1) * 512);
        const auto alone = run_matmul(w, token, 1);
        const std::vector<float> in_batch(batch.begin() + t * w.rows, batch.begin() + (t + 1) * w.rows);
        const std::string what = fmt::format("{} token {} of {}", ember::dtype_name(type), t, n);
        check::expect_close(alone, in_batch, 1e-6, what);
        INFO(what);
        if (n < 64 || is_float(type))  // the row kernel's sums are bitwise batch-independent
          CHECK(std::memcmp(alone.data(), in_batch.data(), alone.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("cpu_exec: the CUDA matmul refuses what it cannot compute") {
  check::Rng rng(9);
  const Weights w(DType::Q4_0, 5, 64, rng);
  std::vector<float> x(3 * 64), y(3 * 5);
  check::GuardedBuffer scratch(ember::cuda::matmul_scratch_bytes(w.view(), 3));
  auto call = [&](MatView wv, MatView xv, ember::F32Mat yv, void* s) {
    ember::cuda::launch_matmul(wv, xv, yv, s, nullptr);
  };
  const MatView xv = check::dense_view(x, 3, 64);
  const ember::F32Mat yv = check::dense_mat(y, 3, 5);
  CHECK_NOTHROW(call(w.view(), xv, yv, scratch.data()));
  CHECK_THROWS_AS(call(w.view(), check::dense_view(x, 3, 32), yv, scratch.data()), ember::Error);  // cols
  CHECK_THROWS_AS(call(w.view(), xv, check::dense_mat(y, 3, 4), scratch.data()), ember::Error);  // y cols
  CHECK_THROWS_AS(call(w.view(), xv, yv, nullptr), ember::Error);                                 // no scratch
  MatView iq = w.view();
  iq.type = DType::IQ4_NL;
  CHECK_THROWS_AS(call(iq, xv, yv, scratch.data()), ember::Error);
  MatView packed = w.view();
  packed.layout = ember::WeightLayout::Interleaved;
  CHECK_THROWS_AS(call(packed, xv, yv, scratch.data()), ember::Error);
  MatView odd = w.view();
  odd.cols = 48;  // not whole q4_0 blocks
  CHECK_THROWS_AS(call(odd, check::dense_view(x, 3, 48), yv, scratch.data()), ember::Error);
}
