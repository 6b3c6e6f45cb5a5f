// The packed Q6_K kernel (matmul_packed_q6_k_avx2.cpp) on blocks built by hand at the
// edges the quantizer rarely writes: codes 63 against activations 127, where two maddubs
// pair sums reach 2 * 2 * 63 * 127 = 32004 (just below the int16 limit), codes 0 (the
// largest bias, -32), scale -128, and each row's split of elements into its two int16 lanes
// (elements 0, 1 of every 4 in one, 2, 3 in the other). test_matmul covers the ordinary
// codes and shapes.
#include <doctest/doctest.h>

#include <vector>

#include "backend_check.h"
#include "packed_check.h"
#include "tensor/fp16.h"

using namespace ember;

namespace {

// A Q6_K block of the codes u[256] in [0, 63] (x = d * sc * (u - 32)): element 128h + 32k + l
// keeps its low nibble in ql[64h + 32(k & 1) + l] (high half for k >= 2) and its top two
// bits in qh[32h + l] at shift 2k (ggml's layout).
block_q6_K make_block(const int* u, const int* sc, float d) {
  block_q6_K b{};
  for (int e = 0; e < QK_K; ++e) {
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    b.ql[64 * h + 32 * (k & 1) + l] |= static_cast<uint8_t>((u[e] & 0x0F) << (4 * (k >> 1)));
    b.qh[32 * h + l] |= static_cast<uint8_t>((u[e] >> 4) << (2 * k));
  }
  for (int g = 0; g < QK_K / 16; ++g) b.scales[g] = static_cast<int8_t>(sc[g]);
  b.d = f32_to_fp16(d);
  return b;
}

}  // namespace

TEST_CASE("packed Q6_K handles extreme codes, scale -128 and saturated activations") {
  if (!cpu_features().avx2) return;
  check::ScopedSimdLevel avx2(SimdLevel::AVX2);
  // 11 rows: one full group of 8 and a short one; 2 super-blocks per row; 5 tokens: one
  // 4-token tile and a single token.
  const int64_t rows = 11, k = 2 * QK_K, tokens = 5;
  const int64_t nb = k / QK_K;
  std::vector<block_q6_K> w(static_cast<size_t>(rows * nb));
  check::Rng rng(11);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      int u[QK_K], sc[QK_K / 16];
      for (int e = 0; e < QK_K; ++e) {
        switch (r % 4) {
          case 0: u[e] = 63; break;                       // every pair sum at its largest
          case 1: u[e] = 0; break;                        // every code -32
          case 2: u[e] = e % 4 < 2 ? 63 : 0; break;       // the row's two lanes apart
          default: u[e] = static_cast<int>(rng.integer(0, 63));
        }
      }
      for (int& s : sc) s = r % 4 == 3 ? static_cast<int>(rng.integer(-128, 127)) : (r % 2 == 0 ? -128 : 127);
      w[r * nb + b] = make_block(u, sc, 0.001f * static_cast<float>(r + 1));
    }
  const MatView wv{DType::Q6_K, k, rows, nb * sizeof(block_q6_K), reinterpret_cast<const uint8_t*>(w.data())};

  // Activations of magnitude 1 quantize to codes +-127 exactly: tokens 0 (all +1), 1 (all
  // -1), 2 (the sign following the lanes of row 2), 3 (random signs); token 4 is random.
  std::vector<float> x(static_cast<size_t>(tokens * k));
  for (int64_t i = 0; i < k; ++i) {
    x[i] = 1.0f;
    x[k + i] = -1.0f;
    x[2 * k + i] = i % 4 < 2 ? 1.0f : -1.0f;
    x[3 * k + i] = rng.integer(0, 1) ? 1.0f : -1.0f;
    x[4 * k + i] = rng.uniform(-1.0f, 1.0f);
  }
  const MatView xv = check::dense_view(x, tokens, k);

  const auto [want, got] = check::reference_and_packed(wv, xv);
  // Tokens 0-3 carry no activation rounding: only f32 rounding separates the two.
  const size_t exact = static_cast<size_t>(4 * rows);
  check::expect_close(got.data(), want.data(), exact, 1e-10, "packed Q6_K, activations +-1");
  check::expect_close(got, want, 5e-4, "packed Q6_K, all tokens");
  // Row 0 against token 0: 512 elements of d * -128 * 31.
  CHECK(want[0] == doctest::Approx(512.0 * fp16_to_f32(w[0].d) * -128 * 31).epsilon(1e-6));
  CHECK(got[0] == doctest::Approx(want[0]).epsilon(1e-6));
}
