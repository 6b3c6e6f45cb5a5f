// The packed Q8_0 kernel (matmul_packed_q8_0_avx2.cpp) on codes the reference quantizer
// never writes: -128, whose magnitude 128 only fits maddubs' unsigned operand, and rows of
// it against saturated activations, where a pair sum reaches 2 * 128 * 127 = 32512 (just
// below the int16 limit). test_matmul covers the ordinary codes and shapes.
#include <doctest/doctest.h>

#include <vector>

#include "backend_check.h"
#include "packed_check.h"
#include "tensor/fp16.h"

using namespace ember;

TEST_CASE("packed Q8_0 handles code -128 and saturated activations") {
  if (!cpu_features().avx2) return;
  check::ScopedSimdLevel avx2(SimdLevel::AVX2);
  // 11 rows: one full group of 8 and a short one; 3 blocks per row.
  const int64_t rows = 11, k = 96, tokens = 4;
  const int64_t nb = k / QK8_0;
  std::vector<block_q8_0> w(static_cast<size_t>(rows * nb));
  check::Rng rng(7);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      block_q8_0& blk = w[r * nb + b];
      blk.d = f32_to_fp16(0.01f * static_cast<float>(r + 1));
      for (int i = 0; i < QK8_0; ++i) {
        int code;
        if (r % 3 == 0)
          code = -128;                                   // every pair at the int16 edge
        else if (r % 3 == 1)
          code = i % 2 == 0 ? -128 : 127;                // mixed extremes
        else
          code = static_cast<int>(rng.integer(-128, 127));  // the whole range
        blk.qs[i] = static_cast<int8_t>(code);
      }
    }
  const MatView wv{DType::Q8_0, k, rows, nb * sizeof(block_q8_0), reinterpret_cast<const uint8_t*>(w.data())};

  // Token 0 all -1 (codes -127: products with -128 all +16256), token 1 all +1, token 2
  // alternating signs (matching the mixed rows), token 3 random.
  std::vector<float> x(static_cast<size_t>(tokens * k));
  for (int64_t i = 0; i < k; ++i) {
    x[i] = -1.0f;
    x[k + i] = 1.0f;
    x[2 * k + i] = i % 2 == 0 ? -1.0f : 1.0f;
    x[3 * k + i] = rng.uniform(-1.0f, 1.0f);
  }
  const MatView xv = check::dense_view(x, tokens, k);

  const auto [want, got] = check::reference_and_packed(wv, xv);
  check::expect_close(got, want, 5e-4, "packed Q8_0 with -128 codes");
  // Row 0 against token 0: 96 products of -128 * -127 codes, i.e. 96 * 128 * d_w.
  CHECK(want[0] == doctest::Approx(96 * 128 * fp16_to_f32(w[0].d)).epsilon(1e-6));
  // The kernel's: 96 * (-128) * (-127) codes times both scales, the activation's (1/127)
  // stored at fp16 precision as ggml's q8_0 stores it.
  const float d_act = fp16_to_f32(f32_to_fp16(1.0f / 127.0f));
  CHECK(got[0] == doctest::Approx(96.0 * 128 * 127 * fp16_to_f32(w[0].d) * d_act).epsilon(1e-6));
}
