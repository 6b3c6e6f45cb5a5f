// The k-quants: 256-element super-blocks with quantized per-sub-block scales
// (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) and Q8_K, the activation format they are dotted with.
//
// Dequantization follows ggml's loops (element order, bit positions, scale packing).
// Quantization (ours, not llama-quantize's, same layout): each sub-block gets a scale
// (and, for Q2/Q4/Q5_K, a min) from a small search: 21 candidate scales around the
// range-filling one, each followed by a least-squares refit of scale (and offset) to the
// codes it produced; the candidate with the smallest squared error wins. The sub-block
// scales are then quantized to the super-block's 4/6/8-bit grid, and the elements are
// re-quantized against the scales actually stored.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tensor/fp16.h"
#include "tensor/quant.h"

namespace ember::quant {

namespace {

int nearest(float v) { return static_cast<int>(std::lround(v)); }

// Q4_K/Q5_K scale packing: 8 (scale, min) pairs of 6 bits in 12 bytes. Pairs 0-3 sit in the
// low 6 bits of bytes 0-3 (scale) and 4-7 (min); pairs 4-7 put their low 4 bits in the
// nibbles of bytes 8-11 and their top 2 bits in the top bits of bytes 0-7.
void get_scale_min_k4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

void set_scale_min_k4(int j, uint8_t* q, int sc, int m) {
  if (j < 4) {
    q[j] = static_cast<uint8_t>((q[j] & 0xC0) | sc);
    q[j + 4] = static_cast<uint8_t>((q[j + 4] & 0xC0) | m);
  } else {
    q[j + 4] = static_cast<uint8_t>((sc & 0x0F) | ((m & 0x0F) << 4));
    q[j - 4] = static_cast<uint8_t>((q[j - 4] & 0x3F) | ((sc >> 4) << 6));
    q[j] = static_cast<uint8_t>((q[j] & 0x3F) | ((m >> 4) << 6));
  }
}

// Q3_K: sixteen 6-bit scales (stored +32) in 12 bytes: low nibble of scale j in byte j % 8
// (low half for j < 8, high half for j >= 8), top 2 bits in byte 8 + j % 4 at bit 2 * (j / 4).
void unpack_q3_scales(const uint8_t* packed, int8_t out[16]) {
  for (int j = 0; j < 16; ++j) {
    const int lo = (packed[j % 8] >> (4 * (j / 8))) & 0x0F;
    const int hi = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<int8_t>((lo | (hi << 4)) - 32);
  }
}

void pack_q3_scales(const int sc[16], uint8_t* packed) {
  std::memset(packed, 0, 12);
  for (int j = 0; j < 16; ++j) {
    const int l = sc[j] + 32;  // 0..63
    packed[j % 8] |= static_cast<uint8_t>((l & 0x0F) << (4 * (j / 8)));
    packed[8 + j % 4] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
  }
}

// Fits x ~= scale * q - min_out with q in [0, nmax], min_out >= 0, scale >= 0.
float fit_scale_min(const float* x, int n, int nmax, float* min_out) {
  float mn = 0.0f, mx = x[0];
  for (int i = 0; i < n; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  *min_out = -mn;
  if (mx <= mn) return 0.0f;
  float best_s = (mx - mn) / nmax, best_b = mn, best_err = INFINITY;
  for (int step = -10; step <= 10; ++step) {
    const float iscale = (nmax + 0.1f * step) / (mx - mn);
    if (iscale <= 0.0f) continue;
    float sq = 0, sqq = 0, sx = 0, sqx = 0;
    int q[QK_K];
    for (int i = 0; i < n; ++i) {
      q[i] = std::clamp(nearest(iscale * (x[i] - mn)), 0, nmax);
      sq += q[i];
      sqq += static_cast<float>(q[i]) * q[i];
      sx += x[i];
      sqx += q[i] * x[i];
    }
    // Least squares for x ~= s*q + b, with the offset b kept <= 0 (stored as a positive min).
    float s, b;
    const float det = n * sqq - sq * sq;
    if (det <= 0.0f) continue;
    s = (n * sqx - sq * sx) / det;
    b = (sqq * sx - sq * sqx) / det;
    if (b > 0.0f) {
      b = 0.0f;
      s = sqx / sqq;
    }
    if (s <= 0.0f) continue;
    float err = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float e = s * q[i] + b - x[i];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_s = s;
      best_b = b;
    }
  }
  *min_out = -best_b;
  return best_s;
}

// Fits x ~= scale * q with q in [-nmax, nmax - 1]. Like ggml, the candidates map the
// largest-magnitude value to -nmax, so the returned scale carries that value's sign.
float fit_scale_symmetric(const float* x, int n, int nmax) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax == 0.0f) return 0.0f;
  float best_s = max / -nmax, best_err = INFINITY;
  for (int step = -10; step <= 10; ++step) {
    const float iscale = -(nmax + 0.1f * step) / max;
    float sqq = 0, sqx = 0;
    int q[QK_K];
    for (int i = 0; i < n; ++i) {
      q[i] = std::clamp(nearest(iscale * x[i]), -nmax, nmax - 1);
      sqq += static_cast<float>(q[i]) * q[i];
      sqx += q[i] * x[i];
    }
    if (sqq == 0.0f) continue;
    const float s = sqx / sqq;
    float err = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float e = s * q[i] - x[i];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_s = s;
    }
  }
  return best_s;
}

// Quantizes non-negative sub-block values v[j] onto [0, levels] with one super scale.
float quantize_unsigned_scales(const float* v, int count, int levels, int* out) {
  float mx = 0.0f;
  for (int j = 0; j < count; ++j) mx = std::max(mx, v[j]);
  const float d = mx / levels;
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < count; ++j) out[j] = std::clamp(nearest(v[j] * id), 0, levels);
  return d;
}

// Quantizes signed sub-block scales onto [-levels, levels - 1] (largest magnitude -> -levels).
float quantize_signed_scales(const float* v, int count, int levels, int* out) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < count; ++j) {
    if (std::fabs(v[j]) > amax) {
      amax = std::fabs(v[j]);
      max = v[j];
    }
  }
  if (amax == 0.0f) {
    for (int j = 0; j < count; ++j) out[j] = 0;
    return 0.0f;
  }
  const float iscale = -levels / max;
  for (int j = 0; j < count; ++j) out[j] = std::clamp(nearest(iscale * v[j]), -levels, levels - 1);
  return 1.0f / iscale;
}

// The code of x under a stored step `d` and offset `-m` (d <= 0 gives code 0... or lo).
int requantize(float x, float d, float m, int lo, int hi) {
  if (d == 0.0f) return std::clamp(0, lo, hi);
  return std::clamp(nearest((x + m) / d), lo, hi);
}

// Shared by Q4_K and Q5_K: eight sub-blocks of 32 with 6-bit scales and mins.
// Writes d, dmin, scales and the codes q[256] in [0, nmax].
void quantize_q45_superblock(const float* x, int nmax, fp16_bits* d_out, fp16_bits* dmin_out, uint8_t* scales,
                             uint8_t* q) {
  float s[8], m[8];
  for (int j = 0; j < 8; ++j) s[j] = fit_scale_min(x + 32 * j, 32, nmax, &m[j]);
  int sc[8], mc[8];
  const float d = quantize_unsigned_scales(s, 8, 63, sc);
  const float dmin = quantize_unsigned_scales(m, 8, 63, mc);
  *d_out = f32_to_fp16(d);
  *dmin_out = f32_to_fp16(dmin);
  std::memset(scales, 0, K_SCALE_SIZE);
  for (int j = 0; j < 8; ++j) set_scale_min_k4(j, scales, sc[j], mc[j]);
  const float dq = fp16_to_f32(*d_out), mq = fp16_to_f32(*dmin_out);
  for (int j = 0; j < 8; ++j) {
    const float step = dq * sc[j], off = mq * mc[j];
    for (int i = 0; i < 32; ++i) q[32 * j + i] = static_cast<uint8_t>(requantize(x[32 * j + i], step, off, 0, nmax));
  }
}

}  // namespace

// ---------------------------------------------------------------- Q2_K
void dequantize_q2_K(const void* src, float* y, int64_t n) {
  const block_q2_K* b = static_cast<const block_q2_K*>(src);
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    int is = 0;
    for (int half = 0; half < QK_K; half += 128) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {  // two sub-blocks of 16 per shift
          const uint8_t sc = b[i].scales[is++];
          const float dl = d * (sc & 0x0F), ml = dmin * (sc >> 4);
          for (int l = 0; l < 16; ++l) *y++ = dl * ((q[l + 16 * part] >> shift) & 3) - ml;
        }
      }
      q += 32;
    }
  }
}

void quantize_q2_K(const float* src, void* dst, int64_t n) {
  block_q2_K* b = static_cast<block_q2_K*>(dst);
  for (int64_t i = 0; i < n / QK_K; ++i, src += QK_K) {
    float s[16], m[16];
    for (int j = 0; j < 16; ++j) s[j] = fit_scale_min(src + 16 * j, 16, 3, &m[j]);
    int sc[16], mc[16];
    b[i].d = f32_to_fp16(quantize_unsigned_scales(s, 16, 15, sc));
    b[i].dmin = f32_to_fp16(quantize_unsigned_scales(m, 16, 15, mc));
    const float dq = fp16_to_f32(b[i].d), mq = fp16_to_f32(b[i].dmin);
    for (int j = 0; j < 16; ++j) b[i].scales[j] = static_cast<uint8_t>(sc[j] | (mc[j] << 4));
    std::memset(b[i].qs, 0, sizeof b[i].qs);
    // Element e = 128*h + 32*k + l (l < 32) has its 2 bits in qs[32*h + l] at shift 2*k,
    // and sub-block e / 16.
    for (int e = 0; e < QK_K; ++e) {
      const int j = e / 16, h = e / 128, k = (e % 128) / 32, l = e % 32;
      const int q = requantize(src[e], dq * sc[j], mq * mc[j], 0, 3);
      b[i].qs[32 * h + l] |= static_cast<uint8_t>(q << (2 * k));
    }
  }
}

// ---------------------------------------------------------------- Q3_K
void dequantize_q3_K(const void* src, float* y, int64_t n) {
  const block_q3_K* b = static_cast<const block_q3_K*>(src);
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d_all = fp16_to_f32(b[i].d);
    int8_t scales[16];
    unpack_q3_scales(b[i].scales, scales);
    const uint8_t* q = b[i].qs;
    const uint8_t* hm = b[i].hmask;
    uint8_t m = 1;
    int is = 0;
    for (int half = 0; half < QK_K; half += 128) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d_all * scales[is++];
          for (int l = 16 * part; l < 16 * part + 16; ++l)
            *y++ = dl * (static_cast<int8_t>((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
        }
        m = static_cast<uint8_t>(m << 1);
      }
      q += 32;
    }
  }
}

void quantize_q3_K(const float* src, void* dst, int64_t n) {
  block_q3_K* b = static_cast<block_q3_K*>(dst);
  for (int64_t i = 0; i < n / QK_K; ++i, src += QK_K) {
    float s[16];
    for (int j = 0; j < 16; ++j) s[j] = fit_scale_symmetric(src + 16 * j, 16, 4);
    int sc[16];
    b[i].d = f32_to_fp16(quantize_signed_scales(s, 16, 32, sc));
    pack_q3_scales(sc, b[i].scales);
    const float dq = fp16_to_f32(b[i].d);
    std::memset(b[i].qs, 0, sizeof b[i].qs);
    std::memset(b[i].hmask, 0, sizeof b[i].hmask);
    // Element e = 128*h + 32*k + l: low 2 bits of (q + 4) in qs[32*h + l] at shift 2*k,
    // bit 2 in hmask[l] at bit 4*h + k.
    for (int e = 0; e < QK_K; ++e) {
      const int j = e / 16, h = e / 128, k = (e % 128) / 32, l = e % 32;
      const int u = requantize(src[e], dq * sc[j], 0.0f, -4, 3) + 4;
      b[i].qs[32 * h + l] |= static_cast<uint8_t>((u & 3) << (2 * k));
      b[i].hmask[l] |= static_cast<uint8_t>((u >> 2) << (4 * h + k));
    }
  }
}

// ---------------------------------------------------------------- Q4_K
void dequantize_q4_K(const void* src, float* y, int64_t n) {
  const block_q4_K* b = static_cast<const block_q4_K*>(src);
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int j = 0; j < 8; j += 2) {  // 64 elements: low nibbles (sub-block j), high (j+1)
      int sc, m;
      get_scale_min_k4(j, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      get_scale_min_k4(j + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0x0F) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
      q += 32;
    }
  }
}

void quantize_q4_K(const float* src, void* dst, int64_t n) {
  block_q4_K* b = static_cast<block_q4_K*>(dst);
  for (int64_t i = 0; i < n / QK_K; ++i, src += QK_K) {
    uint8_t q[QK_K];
    quantize_q45_superblock(src, 15, &b[i].d, &b[i].dmin, b[i].scales, q);
    for (int j = 0; j < QK_K / 64; ++j)
      for (int l = 0; l < 32; ++l) b[i].qs[32 * j + l] = static_cast<uint8_t>(q[64 * j + l] | (q[64 * j + 32 + l] << 4));
  }
}

// ---------------------------------------------------------------- Q5_K
void dequantize_q5_K(const void* src, float* y, int64_t n) {
  const block_q5_K* b = static_cast<const block_q5_K*>(src);
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = fp16_to_f32(b[i].d), dmin = fp16_to_f32(b[i].dmin);
    const uint8_t* ql = b[i].qs;
    const uint8_t* qh = b[i].qh;
    uint8_t u1 = 1, u2 = 2;  // the high bit of sub-block j sits at bit j of qh[l]
    for (int j = 0; j < 8; j += 2) {
      int sc, m;
      get_scale_min_k4(j, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      get_scale_min_k4(j + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0x0F) + ((qh[l] & u1) ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
      ql += 32;
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  }
}

void quantize_q5_K(const float* src, void* dst, int64_t n) {
  block_q5_K* b = static_cast<block_q5_K*>(dst);
  for (int64_t i = 0; i < n / QK_K; ++i, src += QK_K) {
    uint8_t q[QK_K];
    quantize_q45_superblock(src, 31, &b[i].d, &b[i].dmin, b[i].scales, q);
    std::memset(b[i].qh, 0, sizeof b[i].qh);
    for (int j = 0; j < QK_K / 64; ++j) {
      for (int l = 0; l < 32; ++l) {
        const int lo = q[64 * j + l], hi = q[64 * j + 32 + l];
        b[i].qs[32 * j + l] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
        b[i].qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * j)) | ((hi >> 4) << (2 * j + 1)));
      }
    }
  }
}

// ---------------------------------------------------------------- Q6_K
void dequantize_q6_K(const void* src, float* y, int64_t n) {
  const block_q6_K* b = static_cast<const block_q6_K*>(src);
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = fp16_to_f32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int half = 0; half < QK_K; half += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = static_cast<int8_t>((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = static_cast<int8_t>((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = static_cast<int8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = static_cast<int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is + 0] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

void quantize_q6_K(const float* src, void* dst, int64_t n) {
  block_q6_K* b = static_cast<block_q6_K*>(dst);
  for (int64_t i = 0; i < n / QK_K; ++i, src += QK_K) {
    float s[16];
    for (int j = 0; j < 16; ++j) s[j] = fit_scale_symmetric(src + 16 * j, 16, 32);
    int sc[16];
    b[i].d = f32_to_fp16(quantize_signed_scales(s, 16, 128, sc));
    const float dq = fp16_to_f32(b[i].d);
    for (int j = 0; j < 16; ++j) b[i].scales[j] = static_cast<int8_t>(sc[j]);
    std::memset(b[i].ql, 0, sizeof b[i].ql);
    std::memset(b[i].qh, 0, sizeof b[i].qh);
    // Element e = 128*h + 32*k + l: u = q + 32; low nibble in ql[64*h + 32*(k&1) + l]
    // (high half of the byte for k >= 2), top 2 bits in qh[32*h + l] at shift 2*k.
    for (int e = 0; e < QK_K; ++e) {
      const int j = e / 16, h = e / 128, k = (e % 128) / 32, l = e % 32;
      const int u = requantize(src[e], dq * sc[j], 0.0f, -32, 31) + 32;
      b[i].ql[64 * h + 32 * (k & 1) + l] |= static_cast<uint8_t>((u & 0x0F) << (4 * (k >> 1)));
      b[i].qh[32 * h + l] |= static_cast<uint8_t>((u >> 4) << (2 * k));
    }
  }
}

// ---------------------------------------------------------------- Q8_K
void dequantize_q8_K(const void* src, float* y, int64_t n) {
  const block_q8_K* b = static_cast<const block_q8_K*>(src);
  for (int64_t i = 0; i < n / QK_K; ++i)
    for (int j = 0; j < QK_K; ++j) *y++ = b[i].d * b[i].qs[j];
}

void quantize_q8_K(const float* src, void* dst, int64_t n) {
  block_q8_K* b = static_cast<block_q8_K*>(dst);
  for (int64_t i = 0; i < n / QK_K; ++i, src += QK_K) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK_K; ++j) {
      if (std::fabs(src[j]) > amax) {
        amax = std::fabs(src[j]);
        max = src[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&b[i], 0, sizeof b[i]);
      continue;
    }
    const float iscale = -127.0f / max;  // codes stay in [-127, 127]
    for (int j = 0; j < QK_K; ++j) b[i].qs[j] = static_cast<int8_t>(std::clamp(nearest(iscale * src[j]), -127, 127));
    for (int j = 0; j < QK_K / 16; ++j) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b[i].qs[16 * j + l];
      b[i].bsums[j] = static_cast<int16_t>(sum);
    }
    b[i].d = 1.0f / iscale;
  }
}

}  // namespace ember::quant
