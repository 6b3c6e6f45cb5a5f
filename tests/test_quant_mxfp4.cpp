// MXFP4 (gpt-oss's expert weights) against gguf-py, both directions, bit for bit (goldens
// from tests/test_quant_mxfp4_golden.py): the values are small integers times powers of two,
// so every product is exact and the quantizer's nearest-code search has one answer.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend_check.h"
#include "tensor/fp16.h"
#include "tensor/quant.h"

using namespace ember;

namespace {
#include "test_quant_mxfp4_golden.inc"

constexpr int64_t kBlockBytes = 17;
}  // namespace

TEST_CASE("MXFP4 dequantizes gguf-py's random blocks bit for bit, exponents 0, 1 and 255 included") {
  const int64_t n = static_cast<int64_t>(sizeof kMxfp4Bytes / kBlockBytes * 32);
  REQUIRE(sizeof kMxfp4Golden / sizeof kMxfp4Golden[0] == static_cast<size_t>(n));
  REQUIRE(dtype_row_bytes(DType::MXFP4, n) == sizeof kMxfp4Bytes);
  std::vector<float> got(static_cast<size_t>(n));
  dequantize_row(DType::MXFP4, kMxfp4Bytes, got.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    INFO("element ", i, " got ", got[i], " want ", f32_from_bits(kMxfp4Golden[i]));
    CHECK(f32_bits(got[i]) == kMxfp4Golden[i]);
  }
}

TEST_CASE("MXFP4 quantizes as gguf-py does, byte for byte") {
  const int64_t n = static_cast<int64_t>(sizeof kMxfp4Source / sizeof kMxfp4Source[0]);
  REQUIRE(dtype_row_bytes(DType::MXFP4, n) == sizeof kMxfp4Quantized);
  std::vector<float> src(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) src[i] = f32_from_bits(kMxfp4Source[i]);
  check::GuardedBuffer q(sizeof kMxfp4Quantized);
  quantize_row_reference(DType::MXFP4, src.data(), q.data(), n);
  CHECK(q.guards_intact());
  for (size_t i = 0; i < sizeof kMxfp4Quantized; ++i) {
    INFO("byte ", i, " (block ", i / kBlockBytes, ")");
    CHECK(int(q.data()[i]) == int(kMxfp4Quantized[i]));
  }
}

TEST_CASE("MXFP4 round trip: N(0,1) rows within the 4-bit float's error, zeros stay zeros") {
  check::Rng rng(9);
  const int64_t n = 32 * 64;
  std::vector<float> x = rng.normal(static_cast<size_t>(n), 0.0f, 1.0f);
  for (int i = 64; i < 96; ++i) x[i] = 0.0f;
  std::vector<uint8_t> q(dtype_row_bytes(DType::MXFP4, n));
  quantize_row_reference(DType::MXFP4, x.data(), q.data(), n);
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row(DType::MXFP4, q.data(), y.data(), n);
  for (int i = 64; i < 96; ++i) CHECK(y[i] == 0.0f);
  const double e = check::nmse(y, x);
  MESSAGE("MXFP4 quantize->dequantize nmse ", e);
  CHECK(e < 3e-2);  // e2m1: about 1.5 bits of mantissa, coarser than Q4_0 (1.5e-2)
  CHECK(e > 1e-3);  // and not suspiciously exact
}
