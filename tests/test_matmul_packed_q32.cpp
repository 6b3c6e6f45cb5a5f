// The packed Q4_0, Q5_0, Q4_1 and Q5_1 kernels (matmul_packed_q32_avx2.cpp, _avx512.cpp; layout
// packed_q32_layout.h) beyond the reference checks of test_matmul, test_matmul_avx512 and
// test_matmul_packed_shapes:
// - the fifth-bit plane puts each bit where its comment says;
// - against the scalar kernel on the same 8-bit activations, where only the f32 order of
//   the per-block sums differs, so the outputs agree to f32 rounding, a tolerance far
//   tighter than the reference's (which includes the activations' quantization);
// - codes and offsets at their extremes, where the int16 sums of the AVX2 kernel come
//   closest to overflowing (5-bit codes 31 against activations of magnitude 127).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/packed_q32_layout.h"
#include "backend_check.h"
#include "packed_check.h"
#include "tensor/fp16.h"
#include "tensor/quant.h"
#include "util/thread_pool.h"

using namespace ember;

namespace {

constexpr DType kTypes[] = {DType::Q4_0, DType::Q5_0, DType::Q4_1, DType::Q5_1};

// The SIMD levels with a packed kernel here: AVX2, and AVX-512 (VNNI) where the CPU has it.
std::vector<SimdLevel> packed_levels() {
  std::vector<SimdLevel> out;
  if (cpu_features().avx2) out.push_back(SimdLevel::AVX2);
  if (cpu_features().avx512 && cpu_features().avx512_vnni) out.push_back(SimdLevel::AVX512);
  return out;
}

std::vector<float> run_matmul(ThreadPool& pool, const MatView& w, const std::vector<float>& x, int64_t tokens) {
  std::vector<float> y(static_cast<size_t>(tokens * w.rows));
  ops::matmul(pool, w, check::dense_view(x, tokens, w.cols), check::dense_mat(y, tokens, w.rows));
  return y;
}

}  // namespace

TEST_CASE("fifth_bit_plane: element 4q+i's bit at bit q of byte i, element 16+4q+i's at bit 4+q") {
  for (int j = 0; j < 32; ++j) {
    const uint32_t bits = 1u << j;
    uint8_t qh[4];
    std::memcpy(qh, &bits, 4);
    const int e = j % 16, q = e / 4, i = e % 4;
    const uint32_t want = 1u << (8 * i + (j < 16 ? q : 4 + q));
    CAPTURE(j);
    CHECK(cpu::packed32::fifth_bit_plane(qh) == want);
  }
  const uint8_t all[4] = {0xFF, 0xFF, 0xFF, 0xFF};
  CHECK(cpu::packed32::fifth_bit_plane(all) == 0xFFFFFFFFu);
}

TEST_CASE("packed Q4_0, Q5_0, Q4_1, Q5_1 agree with the scalar kernel to f32 rounding") {
  const std::vector<SimdLevel> levels = packed_levels();
  if (levels.empty()) return;
  ThreadPool pool(2);
  uint64_t seed = 31;
  for (DType t : kTypes) {
    // 37 rows: 4 full groups and a short one; 7 blocks; 70 tokens: a token block and 6.
    const int64_t rows = 37, k = 7 * 32, tokens = 70;
    check::Rng rng(seed++);
    const std::vector<uint8_t> w = check::quantized_normal_rows(t, rows, k, rng);
    const MatView wv{t, k, rows, dtype_row_bytes(t, k), w.data()};
    const std::vector<float> x = rng.uniform(static_cast<size_t>(tokens * k), -2.0f, 2.0f);
    std::vector<float> scalar;
    {
      check::ScopedSimdLevel s(SimdLevel::Scalar);
      scalar = run_matmul(pool, wv, x, tokens);
    }
    for (SimdLevel level : levels) {
      check::ScopedSimdLevel s(level);
      const std::optional<PackedWeight> packed = ops::pack_weight(wv);
      REQUIRE(packed.has_value());
      const std::string what = std::string(dtype_name(t)) + " at " + simd_level_name(level);
      // Each output sums 7 block terms in f32 in another order than the scalar loop: a few
      // ulps of the largest term, an nMSE around 1e-14 (measured 4e-15 to 2e-14).
      check::expect_close(run_matmul(pool, packed->view, x, tokens), scalar, 1e-11, what);
      for (int64_t n : {1, 3, 17}) {
        const std::vector<float> few(x.begin(), x.begin() + n * k);
        const std::vector<float> y = run_matmul(pool, packed->view, few, n);
        check::expect_close(y, std::vector<float>(scalar.begin(), scalar.begin() + n * rows), 1e-11,
                            what + ", " + std::to_string(n) + " tokens");
      }
    }
  }
}

TEST_CASE("packed Q4_0, Q5_0, Q4_1, Q5_1 on extreme codes: no int16 overflow") {
  const std::vector<SimdLevel> levels = packed_levels();
  if (levels.empty()) return;
  // Codes at the ends of their range against activations of one magnitude: a block's
  // integer dot reaches 16 * 31 * 127 = 62992 for the 5-bit codes, beyond int16 unless the
  // kernel widens in time.
  const int64_t rows = 11, k = 8 * 32, tokens = 3;
  for (DType t : kTypes) {
    const size_t row_bytes = dtype_row_bytes(t, k);
    std::vector<uint8_t> w(row_bytes * rows);
    std::vector<float> src(static_cast<size_t>(k));
    for (int64_t r = 0; r < rows; ++r) {
      // Alternating -1 and r+1: codes at both ends of the range (0 and 31, or 15 for 4 bits;
      // Q5_0, symmetric, reaches 31 in row 0).
      for (int64_t i = 0; i < k; ++i) src[i] = i % 2 == 0 ? -1.0f : static_cast<float>(r + 1);
      quantize_row_reference(t, src.data(), w.data() + r * row_bytes, k);
    }
    std::vector<float> x(static_cast<size_t>(tokens * k));
    for (int64_t i = 0; i < k; ++i) {
      x[i] = 100.0f;                          // all codes +127
      x[k + i] = -100.0f;                     // all codes -127
      x[2 * k + i] = i % 2 == 0 ? -3.0f : 3.0f;  // signs with the weights'
    }
    const MatView wv{t, k, rows, row_bytes, w.data()};
    for (SimdLevel level : levels) {
      check::ScopedSimdLevel s(level);
      const auto [want, got] = check::reference_and_packed(wv, check::dense_view(x, tokens, k));
      check::expect_close(got, want, 5e-4, std::string(dtype_name(t)) + " extreme at " + simd_level_name(level));
    }
  }
}
