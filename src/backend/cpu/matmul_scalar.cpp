// Portable kernels: the integer-dot formulation of the fast path in plain C++, one output
// at a time. They decode weight blocks with their own code (not the dequantizers), so the
// tests comparing them with the reference loop check two independent readings of a layout.
#include <cstring>

#include "backend/cpu/matmul_kernels.h"
#include "tensor/fp16.h"

namespace ember::cpu {

namespace {

// ---- 32-element formats: x = d * q + m (m = 0 for the symmetric formats) ----
struct Decoded32 {
  float d, m;
  int q[32];
};

uint32_t qh_bits(const uint8_t qh[4]) {
  uint32_t v;
  std::memcpy(&v, qh, 4);
  return v;
}

void decode(const block_q4_0& b, Decoded32& o) {
  o.d = fp16_to_f32(b.d);
  o.m = 0.0f;
  for (int j = 0; j < 16; ++j) {
    o.q[j] = (b.qs[j] & 15) - 8;
    o.q[j + 16] = (b.qs[j] >> 4) - 8;
  }
}
void decode(const block_q4_1& b, Decoded32& o) {
  o.d = fp16_to_f32(b.d);
  o.m = fp16_to_f32(b.m);
  for (int j = 0; j < 16; ++j) {
    o.q[j] = b.qs[j] & 15;
    o.q[j + 16] = b.qs[j] >> 4;
  }
}
void decode(const block_q5_0& b, Decoded32& o) {
  o.d = fp16_to_f32(b.d);
  o.m = 0.0f;
  const uint32_t h = qh_bits(b.qh);
  for (int j = 0; j < 16; ++j) {
    o.q[j] = ((b.qs[j] & 15) | (((h >> j) & 1) << 4)) - 16;
    o.q[j + 16] = ((b.qs[j] >> 4) | (((h >> (j + 16)) & 1) << 4)) - 16;
  }
}
void decode(const block_q5_1& b, Decoded32& o) {
  o.d = fp16_to_f32(b.d);
  o.m = fp16_to_f32(b.m);
  const uint32_t h = qh_bits(b.qh);
  for (int j = 0; j < 16; ++j) {
    o.q[j] = (b.qs[j] & 15) | (((h >> j) & 1) << 4);
    o.q[j + 16] = (b.qs[j] >> 4) | (((h >> (j + 16)) & 1) << 4);
  }
}
void decode(const block_q8_0& b, Decoded32& o) {
  o.d = fp16_to_f32(b.d);
  o.m = 0.0f;
  for (int j = 0; j < 32; ++j) o.q[j] = b.qs[j];
}
void decode(const block_mxfp4& b, Decoded32& o) {
  o.d = mxfp4_half_scale(b.e);
  o.m = 0.0f;
  for (int j = 0; j < 16; ++j) {
    o.q[j] = kMxfp4Values[b.qs[j] & 15];
    o.q[j + 16] = kMxfp4Values[b.qs[j] >> 4];
  }
}

template <class Block>
float dot_32(int64_t k, const uint8_t* w, const uint8_t* a) {
  const Block* wb = reinterpret_cast<const Block*>(w);
  const block_q8s* ab = reinterpret_cast<const block_q8s*>(a);
  float sum = 0.0f;
  Decoded32 dec;
  for (int64_t b = 0; b < k / 32; ++b) {
    decode(wb[b], dec);
    int isum = 0;
    for (int j = 0; j < 32; ++j) isum += dec.q[j] * ab[b].qs[j];
    // sum_j (d q_j + m) a_j = d * da * isum + m * (da * sum q_a)
    sum += dec.d * ab[b].d * static_cast<float>(isum) + dec.m * ab[b].s;
  }
  return sum;
}

// ---- k-quants: x = d * sc[g] * q - dmin * m[g], g = element / 16 ----
struct DecodedK {
  float d, dmin;
  int sc[16], m[16];
  int q[256];
};

void scale_min_k4(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Element e = 128*h + 32*k + l for the 2/3/6-bit layouts that stack 4 planes per 128.
void decode(const block_q2_K& b, DecodedK& o) {
  o.d = fp16_to_f32(b.d);
  o.dmin = fp16_to_f32(b.dmin);
  for (int g = 0; g < 16; ++g) {
    o.sc[g] = b.scales[g] & 15;
    o.m[g] = b.scales[g] >> 4;
  }
  for (int e = 0; e < 256; ++e) o.q[e] = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}
void decode(const block_q3_K& b, DecodedK& o) {
  o.d = fp16_to_f32(b.d);
  o.dmin = 0.0f;
  for (int g = 0; g < 16; ++g) {
    const int lo = (b.scales[g % 8] >> (4 * (g / 8))) & 15;
    const int hi = (b.scales[8 + g % 4] >> (2 * (g / 4))) & 3;
    o.sc[g] = (lo | (hi << 4)) - 32;
    o.m[g] = 0;
  }
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    const int low = (b.qs[32 * h + l] >> (2 * k)) & 3;
    const int high = (b.hmask[l] >> (4 * h + k)) & 1;
    o.q[e] = (low | (high << 2)) - 4;
  }
}
void decode(const block_q4_K& b, DecodedK& o) {
  o.d = fp16_to_f32(b.d);
  o.dmin = fp16_to_f32(b.dmin);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    scale_min_k4(b.scales, j, &sc, &m);
    o.sc[2 * j] = o.sc[2 * j + 1] = sc;
    o.m[2 * j] = o.m[2 * j + 1] = m;
  }
  for (int e = 0; e < 256; ++e) o.q[e] = (b.qs[32 * (e / 64) + e % 32] >> (4 * ((e / 32) % 2))) & 15;
}
void decode(const block_q5_K& b, DecodedK& o) {
  o.d = fp16_to_f32(b.d);
  o.dmin = fp16_to_f32(b.dmin);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    scale_min_k4(b.scales, j, &sc, &m);
    o.sc[2 * j] = o.sc[2 * j + 1] = sc;
    o.m[2 * j] = o.m[2 * j + 1] = m;
  }
  for (int e = 0; e < 256; ++e) {
    const int low = (b.qs[32 * (e / 64) + e % 32] >> (4 * ((e / 32) % 2))) & 15;
    o.q[e] = low | (((b.qh[e % 32] >> (e / 32)) & 1) << 4);
  }
}
void decode(const block_q6_K& b, DecodedK& o) {
  o.d = fp16_to_f32(b.d);
  o.dmin = 0.0f;
  for (int g = 0; g < 16; ++g) {
    o.sc[g] = b.scales[g];
    o.m[g] = 0;
  }
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    const int low = (b.ql[64 * h + 32 * (k & 1) + l] >> (4 * (k >> 1))) & 15;
    const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
    o.q[e] = (low | (high << 4)) - 32;
  }
}

template <class Block>
float dot_k(int64_t k, const uint8_t* w, const uint8_t* a) {
  const Block* wb = reinterpret_cast<const Block*>(w);
  const block_q8_K* ab = reinterpret_cast<const block_q8_K*>(a);
  float sum = 0.0f;
  DecodedK dec;
  for (int64_t b = 0; b < k / QK_K; ++b) {
    decode(wb[b], dec);
    int scaled = 0, mins = 0;
    for (int g = 0; g < 16; ++g) {
      int isum = 0;
      for (int l = 0; l < 16; ++l) isum += dec.q[16 * g + l] * ab[b].qs[16 * g + l];
      scaled += dec.sc[g] * isum;
      mins += dec.m[g] * ab[b].bsums[g];
    }
    sum += ab[b].d * (dec.d * static_cast<float>(scaled) - dec.dmin * static_cast<float>(mins));
  }
  return sum;
}

// ---- float weights ----
inline float load_f(const float* p, int64_t i) { return p[i]; }
inline float load_f(const uint16_t* p, int64_t i, bool bf16) { return bf16 ? bf16_to_f32(p[i]) : fp16_to_f32(p[i]); }

template <DType T>
float dot_float(int64_t k, const uint8_t* w, const uint8_t* a) {
  const float* x = reinterpret_cast<const float*>(a);
  float sum = 0.0f;
  if constexpr (T == DType::F32) {
    const float* wf = reinterpret_cast<const float*>(w);
    for (int64_t i = 0; i < k; ++i) sum += wf[i] * x[i];
  } else {
    const uint16_t* wh = reinterpret_cast<const uint16_t*>(w);
    for (int64_t i = 0; i < k; ++i) sum += load_f(wh, i, T == DType::BF16) * x[i];
  }
  return sum;
}

using DotFn = float (*)(int64_t, const uint8_t*, const uint8_t*);

template <DotFn Dot>
void tile(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  for (int64_t c = c0; c < c1; ++c)
    for (int64_t r = r0; r < r1; ++r)
      p.y[c * p.y_stride + r] = Dot(p.k, p.w + r * p.w_stride, p.a + c * p.a_stride);
}

const MatmulKernel kF32{ActFormat::F32, tile<dot_float<DType::F32>>};
const MatmulKernel kF16{ActFormat::F32, tile<dot_float<DType::F16>>};
const MatmulKernel kBF16{ActFormat::F32, tile<dot_float<DType::BF16>>};
const MatmulKernel kQ4_0{ActFormat::Q8S, tile<dot_32<block_q4_0>>};
const MatmulKernel kQ4_1{ActFormat::Q8S, tile<dot_32<block_q4_1>>};
const MatmulKernel kQ5_0{ActFormat::Q8S, tile<dot_32<block_q5_0>>};
const MatmulKernel kQ5_1{ActFormat::Q8S, tile<dot_32<block_q5_1>>};
const MatmulKernel kQ8_0{ActFormat::Q8S, tile<dot_32<block_q8_0>>};
const MatmulKernel kMXFP4{ActFormat::Q8S, tile<dot_32<block_mxfp4>>};
const MatmulKernel kQ2_K{ActFormat::Q8K, tile<dot_k<block_q2_K>>};
const MatmulKernel kQ3_K{ActFormat::Q8K, tile<dot_k<block_q3_K>>};
const MatmulKernel kQ4_K{ActFormat::Q8K, tile<dot_k<block_q4_K>>};
const MatmulKernel kQ5_K{ActFormat::Q8K, tile<dot_k<block_q5_K>>};
const MatmulKernel kQ6_K{ActFormat::Q8K, tile<dot_k<block_q6_K>>};

}  // namespace

const MatmulKernel* matmul_kernel_scalar(DType w) {
  switch (w) {
    case DType::F32: return &kF32;
    case DType::F16: return &kF16;
    case DType::BF16: return &kBF16;
    case DType::Q4_0: return &kQ4_0;
    case DType::Q4_1: return &kQ4_1;
    case DType::Q5_0: return &kQ5_0;
    case DType::Q5_1: return &kQ5_1;
    case DType::Q8_0: return &kQ8_0;
    case DType::MXFP4: return &kMXFP4;
    case DType::Q2_K: return &kQ2_K;
    case DType::Q3_K: return &kQ3_K;
    case DType::Q4_K: return &kQ4_K;
    case DType::Q5_K: return &kQ5_K;
    case DType::Q6_K: return &kQ6_K;
    default: return nullptr;
  }
}

}  // namespace ember::cpu
