// The 32-element block formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.
// Layout facts (ggml): in the 4/5-bit formats byte j of qs holds element j in its low
// nibble and element j+16 in its high nibble; Q5's fifth bit of element j is bit j of the
// little-endian 32-bit qh. Quantizers use ggml's choice of scale: the symmetric formats map
// the value of largest magnitude to the most negative code (-8, -16) so its sign costs no
// range; the _1 formats map [min, max] onto [0, 2^b - 1].
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/fp16.h"
#include "tensor/quant.h"

namespace ember::quant {

namespace {

uint32_t load_qh(const uint8_t qh[4]) {
  uint32_t v;
  std::memcpy(&v, qh, 4);
  return v;  // little-endian hosts only (x86, ARM): same byte order as the file
}

// Largest-magnitude value with its sign, as the symmetric formats want it.
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void min_max(const float* x, int n, float* mn, float* mx) {
  *mn = x[0];
  *mx = x[0];
  for (int j = 1; j < n; ++j) {
    *mn = std::min(*mn, x[j]);
    *mx = std::max(*mx, x[j]);
  }
}

}  // namespace

void dequantize_q4_0(const void* src, float* dst, int64_t n) {
  const block_q4_0* b = static_cast<const block_q4_0*>(src);
  for (int64_t i = 0; i < n / QK4_0; ++i, dst += QK4_0) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < QK4_0 / 2; ++j) {
      dst[j] = static_cast<float>((b[i].qs[j] & 0x0F) - 8) * d;
      dst[j + QK4_0 / 2] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_1(const void* src, float* dst, int64_t n) {
  const block_q4_1* b = static_cast<const block_q4_1*>(src);
  for (int64_t i = 0; i < n / QK4_1; ++i, dst += QK4_1) {
    const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
    for (int j = 0; j < QK4_1 / 2; ++j) {
      dst[j] = static_cast<float>(b[i].qs[j] & 0x0F) * d + m;
      dst[j + QK4_1 / 2] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_q5_0(const void* src, float* dst, int64_t n) {
  const block_q5_0* b = static_cast<const block_q5_0*>(src);
  for (int64_t i = 0; i < n / QK5_0; ++i, dst += QK5_0) {
    const float d = fp16_to_f32(b[i].d);
    const uint32_t qh = load_qh(b[i].qh);
    for (int j = 0; j < QK5_0 / 2; ++j) {
      const int hi0 = ((qh >> j) & 1) << 4, hi1 = ((qh >> (j + 16)) & 1) << 4;
      dst[j] = static_cast<float>(((b[i].qs[j] & 0x0F) | hi0) - 16) * d;
      dst[j + QK5_0 / 2] = static_cast<float>(((b[i].qs[j] >> 4) | hi1) - 16) * d;
    }
  }
}

void dequantize_q5_1(const void* src, float* dst, int64_t n) {
  const block_q5_1* b = static_cast<const block_q5_1*>(src);
  for (int64_t i = 0; i < n / QK5_1; ++i, dst += QK5_1) {
    const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
    const uint32_t qh = load_qh(b[i].qh);
    for (int j = 0; j < QK5_1 / 2; ++j) {
      const int hi0 = ((qh >> j) & 1) << 4, hi1 = ((qh >> (j + 16)) & 1) << 4;
      dst[j] = static_cast<float>((b[i].qs[j] & 0x0F) | hi0) * d + m;
      dst[j + QK5_1 / 2] = static_cast<float>((b[i].qs[j] >> 4) | hi1) * d + m;
    }
  }
}

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
  const block_q8_0* b = static_cast<const block_q8_0*>(src);
  for (int64_t i = 0; i < n / QK8_0; ++i, dst += QK8_0) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < QK8_0; ++j) dst[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void dequantize_q8_1(const void* src, float* dst, int64_t n) {
  const block_q8_1* b = static_cast<const block_q8_1*>(src);
  for (int64_t i = 0; i < n / QK8_1; ++i, dst += QK8_1) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < QK8_1; ++j) dst[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void quantize_q4_0(const float* src, void* dst, int64_t n) {
  block_q4_0* b = static_cast<block_q4_0*>(dst);
  for (int64_t i = 0; i < n / QK4_0; ++i, src += QK4_0) {
    const float d = signed_absmax(src, QK4_0) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    for (int j = 0; j < QK4_0 / 2; ++j) {
      // + 8.5 then truncation = round to nearest, shifted to the unsigned code range
      const int q0 = std::min(15, static_cast<int>(src[j] * id + 8.5f));
      const int q1 = std::min(15, static_cast<int>(src[j + QK4_0 / 2] * id + 8.5f));
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quantize_q4_1(const float* src, void* dst, int64_t n) {
  block_q4_1* b = static_cast<block_q4_1*>(dst);
  for (int64_t i = 0; i < n / QK4_1; ++i, src += QK4_1) {
    float mn, mx;
    min_max(src, QK4_1, &mn, &mx);
    const float d = (mx - mn) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    b[i].m = f32_to_fp16(mn);
    for (int j = 0; j < QK4_1 / 2; ++j) {
      const int q0 = std::min(15, static_cast<int>((src[j] - mn) * id + 0.5f));
      const int q1 = std::min(15, static_cast<int>((src[j + QK4_1 / 2] - mn) * id + 0.5f));
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void quantize_q5_0(const float* src, void* dst, int64_t n) {
  block_q5_0* b = static_cast<block_q5_0*>(dst);
  for (int64_t i = 0; i < n / QK5_0; ++i, src += QK5_0) {
    const float d = signed_absmax(src, QK5_0) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < QK5_0 / 2; ++j) {
      const int q0 = std::min(31, static_cast<int>(src[j] * id + 16.5f));
      const int q1 = std::min(31, static_cast<int>(src[j + QK5_0 / 2] * id + 16.5f));
      b[i].qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
    }
    std::memcpy(b[i].qh, &qh, 4);
  }
}

void quantize_q5_1(const float* src, void* dst, int64_t n) {
  block_q5_1* b = static_cast<block_q5_1*>(dst);
  for (int64_t i = 0; i < n / QK5_1; ++i, src += QK5_1) {
    float mn, mx;
    min_max(src, QK5_1, &mn, &mx);
    const float d = (mx - mn) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_fp16(d);
    b[i].m = f32_to_fp16(mn);
    uint32_t qh = 0;
    for (int j = 0; j < QK5_1 / 2; ++j) {
      const int q0 = std::min(31, static_cast<int>((src[j] - mn) * id + 0.5f));
      const int q1 = std::min(31, static_cast<int>((src[j + QK5_1 / 2] - mn) * id + 0.5f));
      b[i].qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      qh |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
      qh |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
    }
    std::memcpy(b[i].qh, &qh, 4);
  }
}

namespace {
// Symmetric 8-bit: d = absmax / 127, q = round(x / d). Returns the sum of the codes.
int quantize_8bit_block(const float* x, float* d_out, int8_t* q) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int sum = 0;
  for (int j = 0; j < 32; ++j) {
    q[j] = static_cast<int8_t>(std::lround(x[j] * id));
    sum += q[j];
  }
  *d_out = d;
  return sum;
}
}  // namespace

void quantize_q8_0(const float* src, void* dst, int64_t n) {
  block_q8_0* b = static_cast<block_q8_0*>(dst);
  for (int64_t i = 0; i < n / QK8_0; ++i, src += QK8_0) {
    float d;
    quantize_8bit_block(src, &d, b[i].qs);
    b[i].d = f32_to_fp16(d);
  }
}

void quantize_q8_1(const float* src, void* dst, int64_t n) {
  block_q8_1* b = static_cast<block_q8_1*>(dst);
  for (int64_t i = 0; i < n / QK8_1; ++i, src += QK8_1) {
    float d;
    const int sum = quantize_8bit_block(src, &d, b[i].qs);
    b[i].d = f32_to_fp16(d);
    b[i].s = f32_to_fp16(d * static_cast<float>(sum));
  }
}

}  // namespace ember::quant
