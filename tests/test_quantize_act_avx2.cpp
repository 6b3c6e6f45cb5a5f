// The AVX2 activation quantizer against the scalar one (quantize_act_row_scalar): the bytes must be
// identical, including the rounding of exact ties (half to even for Q8S, away from zero for
// Q8K), the sign of the Q8K scale (first element of largest magnitude) and all-zero blocks.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/quantize_act_avx2.h"
#include "backend_check.h"

using namespace ember;
using cpu::ActFormat;

namespace {

void expect_same_bytes(ActFormat f, const std::vector<float>& x, const std::string& what) {
  const int64_t k = static_cast<int64_t>(x.size());
  const size_t bytes = cpu::act_row_bytes(f, k);
  std::vector<uint8_t> want(bytes + 16, 0xA5), got(bytes + 16, 0xA5);  // + a sentinel tail
  cpu::quantize_act_row_scalar(f, x.data(), want.data(), k);
  cpu::quantize_act_row_avx2(f, x.data(), got.data(), k);
  INFO(what);
  CHECK(std::memcmp(want.data(), got.data(), want.size()) == 0);
}

// Elements whose scaled value is an exact tie n + 1/2: the scale is 1 when the block's
// largest magnitude is 127 (Q8S: d = 127/127; Q8K: iscale = -127/max, so max = -127).
std::vector<float> ties(int64_t k, int block, float peak, check::Rng& rng) {
  std::vector<float> x(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) x[i] = static_cast<float>(rng.integer(-126, 125)) + 0.5f;
  for (int64_t b = 0; b < k; b += block) x[b + rng.integer(0, block - 1)] = peak;
  return x;
}

}  // namespace

TEST_CASE("AVX2 activation quantization gives the scalar quantizer's bytes") {
  if (!cpu_features().avx2) return;  // nothing to compare on this CPU
  check::Rng rng(7);
  for (ActFormat f : {ActFormat::Q8S, ActFormat::Q8K}) {
    const std::string name = f == ActFormat::Q8S ? "Q8S" : "Q8K";
    const int block = f == ActFormat::Q8S ? 32 : QK_K;
    const int64_t k = 4 * QK_K;
    expect_same_bytes(f, rng.uniform(static_cast<size_t>(k), -3.0f, 3.0f), name + " uniform");
    std::vector<float> heavy(static_cast<size_t>(k));
    for (float& v : heavy) v = rng.normal() * (rng.integer(0, 50) == 0 ? 100.0f : 1.0f);
    expect_same_bytes(f, heavy, name + " normal with outliers");
    expect_same_bytes(f, ties(k, block, f == ActFormat::Q8S ? 127.0f : -127.0f, rng), name + " exact ties");
    // Largest magnitude reached by +m and -m: the first one sets the Q8K scale's sign.
    std::vector<float> signs = rng.uniform(static_cast<size_t>(k), -1.0f, 1.0f);
    for (int64_t b = 0; b < k; b += block) {
      signs[b + 3] = (b / block) % 2 ? 2.0f : -2.0f;
      signs[b + 17] = -signs[b + 3];
    }
    expect_same_bytes(f, signs, name + " +m and -m");
    std::vector<float> zeros(static_cast<size_t>(k), 0.0f);
    for (int64_t i = k / 2; i < k; ++i) zeros[i] = rng.uniform(-1e-30f, 1e-30f);  // tiny, some denormal-scaled
    expect_same_bytes(f, zeros, name + " zero and tiny blocks");
  }
}
