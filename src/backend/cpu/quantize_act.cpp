// Activation quantization for the integer fast path (see matmul_kernels.h).
#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/quantize_act_avx2.h"
#include "tensor/fp16.h"
#include "tensor/quant.h"

namespace ember::cpu {

size_t act_row_bytes(ActFormat f, int64_t k) {
  switch (f) {
    case ActFormat::F32: return static_cast<size_t>(k) * sizeof(float);
    case ActFormat::Q8S: return static_cast<size_t>(k / 32) * sizeof(block_q8s);
    case ActFormat::Q8K: return dtype_row_bytes(DType::Q8_K, k);
  }
  return 0;
}

namespace {
// Symmetric 8-bit per 32 elements: d = absmax / 127, q = round(x / d), s = d * sum(q).
// d is kept at fp16 precision (after q is rounded with the f32 one), as ggml's q8_0/q8_1
// store it: the product of the two scales is then what llama.cpp multiplies, which halved
// the KL divergence from llama.cpp's logits on Q8_0 files (tools/ppl-vs-llamacpp).
void quantize_q8s(const float* x, block_q8s* out, int64_t k) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      const int q = static_cast<int>(std::nearbyint(x[j] * id));
      out[b].qs[j] = static_cast<int8_t>(q);
      sum += q;
    }
    const float d16 = fp16_to_f32(f32_to_fp16(d));
    out[b].d = d16;
    out[b].s = d16 * static_cast<float>(sum);
  }
}
}  // namespace

void quantize_act_row_scalar(ActFormat f, const float* x, void* dst, int64_t k) {
  if (f == ActFormat::Q8S)
    quantize_q8s(x, static_cast<block_q8s*>(dst), k);
  else if (f == ActFormat::Q8K)
    quant::quantize_q8_K(x, dst, k);
}

void quantize_act_row(ActFormat f, const float* x, void* dst, int64_t k) {
  // Both give the same bytes (test_quantize_act_avx2), so the level never changes results.
  if (f != ActFormat::F32 && simd_level() >= SimdLevel::AVX2)
    quantize_act_row_avx2(f, x, dst, k);
  else
    quantize_act_row_scalar(f, x, dst, k);
}

}  // namespace ember::cpu
