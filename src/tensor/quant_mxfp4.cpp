// MXFP4 (OCP microscaling fp4, as ggml stores it for gpt-oss's experts): blocks of 32 e2m1
// codes sharing one E8M0 exponent. The quantizer is ggml's reference one: the exponent
// e = floor(log2 amax) - 2 + 127 puts the block's largest magnitude at [8, 16) half scales,
// the binade of the top doubled codes 8 and 12 (larger values clip to 12), then each element
// takes the nearest code point (the first one on a tie).
#include <cmath>

#include "tensor/quant.h"

namespace ember::quant {

namespace {

int nearest_code(float x, float half_scale) {
  int best = 0;
  float best_err = std::fabs(kMxfp4Values[0] * half_scale - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(kMxfp4Values[i] * half_scale - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

}  // namespace

void dequantize_mxfp4(const void* src, float* dst, int64_t n) {
  const block_mxfp4* b = static_cast<const block_mxfp4*>(src);
  for (int64_t i = 0; i < n / QK_MXFP4; ++i, dst += QK_MXFP4) {
    const float d = mxfp4_half_scale(b[i].e);
    for (int j = 0; j < QK_MXFP4 / 2; ++j) {
      dst[j] = static_cast<float>(kMxfp4Values[b[i].qs[j] & 0x0F]) * d;
      dst[j + QK_MXFP4 / 2] = static_cast<float>(kMxfp4Values[b[i].qs[j] >> 4]) * d;
    }
  }
}

void quantize_mxfp4(const float* src, void* dst, int64_t n) {
  block_mxfp4* b = static_cast<block_mxfp4*>(dst);
  for (int64_t i = 0; i < n / QK_MXFP4; ++i, src += QK_MXFP4) {
    float amax = 0.0f;
    for (int j = 0; j < QK_MXFP4; ++j) amax = std::fmax(amax, std::fabs(src[j]));
    // ggml: (uint8_t)(floorf(log2f(amax)) - 2 + 127); the cast keeps the low byte
    const uint8_t e = amax > 0.0f ? static_cast<uint8_t>(static_cast<int>(std::floor(std::log2(amax))) - 2 + 127) : 0;
    const float d = mxfp4_half_scale(e);
    b[i].e = e;
    for (int j = 0; j < QK_MXFP4 / 2; ++j)
      b[i].qs[j] = static_cast<uint8_t>(nearest_code(src[j], d) | (nearest_code(src[j + QK_MXFP4 / 2], d) << 4));
  }
}

}  // namespace ember::quant
