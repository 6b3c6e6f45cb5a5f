// BF16 weights (rows layout) with AVX-512 BF16 (see matmul_bf16_avx512.h, avx512_intrinsics.h).
//
// Each 32-element chunk of an activation row is rounded to bf16 (vcvtne2ps2bf16: round to
// nearest even, denormals to zero, as llama.cpp's AVX512-BF16 path rounds its activations)
// and dotted with the weight row's 32 bf16 by one dpbf16, which adds the pairs' exact
// products into 16 f32 lanes. That is twice the multiply-adds per instruction of widening the
// weights to f32 for FMAs (the AVX2 kernel's way), for prefill's compute-bound tiles; decode is
// bound by reading the weights either way. The price is the activations' rounding: a relative
// error of at most 2^-9 per element, so an nMSE around 1e-6 against the f32 reference (the
// test bounds it by 5e-4, as for the 8-bit activations, and checks the kernel against the
// reference on the rounded activations much more tightly).
//
// Every output is one accumulator: zero, one dpbf16 per chunk in order, the last k % 32
// elements zero-padded to a whole chunk (0 * 0 adds nothing), one fixed horizontal sum. The
// activations' rounding does not depend on the tile either, so one token alone gives bitwise
// the batch's result whatever tile computed it (speculative verification relies on that).
#include <cstring>

#include "backend/cpu/avx512_intrinsics.h"
#include "backend/cpu/matmul_bf16_avx512.h"

#if !defined(EMBER_AVX512_EMULATED) && !defined(__AVX512BF16__)
#error "matmul_bf16_avx512.cpp is built with -mavx512bf16 (or EMBER_AVX512_EMULATED)"
#endif

namespace ember::cpu::EMBER_AVX512_NS {

namespace {

constexpr int64_t kChunk = 32;  // bf16 per 512-bit register

// 32 bf16 bit patterns as dpbf16's operand type.
inline __m512bh as_bf16(__m512i v) {
  __m512bh r;
  static_assert(sizeof r == sizeof v, "__m512bh holds 32 bf16");
  std::memcpy(&r, &v, sizeof r);
  return r;
}

#if defined(EMBER_AVX512_EMULATED)
// SIMDe 0.7.4 has no cvtne2ps_pbh: the SDM's convert_fp32_to_bfloat16, lane by lane.
inline uint16_t round_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7F800000u) == 0) return static_cast<uint16_t>((x >> 16) & 0x8000u);  // zero, denormal: signed 0
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN, made quiet
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);  // nearest even; inf stays inf
}
#endif

// Elements 0-15 (lo) and 16-31 (hi) rounded to bf16, in order.
inline __m512bh round_chunk(__m512 lo, __m512 hi) {
#if defined(EMBER_AVX512_EMULATED)
  alignas(64) float f[kChunk];
  alignas(64) uint16_t h[kChunk];
  _mm512_store_ps(f, lo);
  _mm512_store_ps(f + 16, hi);
  for (int i = 0; i < kChunk; ++i) h[i] = round_to_bf16(f[i]);
  return as_bf16(_mm512_load_si512(h));
#else
  return _mm512_cvtne2ps_pbh(hi, lo);  // the second operand gives the low half
#endif
}

// The 16 lanes' sum by halving, the same order in both builds (GCC 12's 512 -> 256-bit casts
// start from an "undefined" vector that -Wuninitialized reports, and SIMDe has no reduce).
inline float hsum(__m512 v) {
  alignas(64) float lane[16];
  _mm512_store_ps(lane, v);
  for (int n = 8; n > 0; n /= 2)
    for (int i = 0; i < n; ++i) lane[i] += lane[i + n];
  return lane[0];
}

// Activation rows rounded to bf16, each zero-padded to whole chunks.
struct RoundedRows {
  const uint16_t* data;
  int64_t stride;  // elements: k rounded up to a whole chunk
  const uint16_t* row(int j) const { return data + j * stride; }
};

// Outputs of weight rows r .. r+RM-1 for the RN rounded activation rows (tokens c .. c+RN-1).
template <int RM, int RN>
void micro(const MatmulArgs& p, const RoundedRows& act, int64_t r, int64_t c) {
  const uint16_t* w[RM];
  for (int i = 0; i < RM; ++i) w[i] = reinterpret_cast<const uint16_t*>(p.w + (r + i) * p.w_stride);
  __m512 acc[RM][RN];
  for (int i = 0; i < RM; ++i)
    for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_setzero_ps();
  const int64_t whole = p.k / kChunk * kChunk;
  for (int64_t e = 0; e < whole; e += kChunk) {
    __m512bh av[RN];
    for (int j = 0; j < RN; ++j) av[j] = as_bf16(_mm512_loadu_si512(act.row(j) + e));
    for (int i = 0; i < RM; ++i) {
      const __m512bh wv = as_bf16(_mm512_loadu_si512(w[i] + e));
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv, av[j]);
    }
  }
  if (const int64_t rest = p.k - whole; rest > 0) {
    // The weights' last elements copied into a zeroed chunk (nothing past the row is read;
    // masked loads would do that natively, but SIMDe's may read all 64 bytes); the
    // activations' padding is zero already.
    __m512bh av[RN];
    for (int j = 0; j < RN; ++j) av[j] = as_bf16(_mm512_loadu_si512(act.row(j) + whole));
    for (int i = 0; i < RM; ++i) {
      alignas(64) uint16_t t[kChunk] = {};
      std::memcpy(t, w[i] + whole, static_cast<size_t>(rest) * sizeof(uint16_t));
      const __m512bh wv = as_bf16(_mm512_load_si512(t));
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], wv, av[j]);
    }
  }
  for (int j = 0; j < RN; ++j)
    for (int i = 0; i < RM; ++i) p.y[(c + j) * p.y_stride + r + i] = hsum(acc[i][j]);
}

// Rounds activation rows c .. c+n-1 into dst (n rows of `stride` elements).
void round_rows(const MatmulArgs& p, int64_t c, int n, uint16_t* dst, int64_t stride) {
  const int64_t whole = p.k / kChunk * kChunk;
  for (int j = 0; j < n; ++j, dst += stride) {
    const float* a = reinterpret_cast<const float*>(p.a + (c + j) * p.a_stride);
    for (int64_t e = 0; e < whole; e += kChunk) {
      const __m512bh h = round_chunk(_mm512_loadu_ps(a + e), _mm512_loadu_ps(a + e + 16));
      std::memcpy(dst + e, &h, sizeof h);
    }
    if (whole < p.k) {
      alignas(64) float t[kChunk] = {};
      std::memcpy(t, a + whole, static_cast<size_t>(p.k - whole) * sizeof(float));
      const __m512bh h = round_chunk(_mm512_load_ps(t), _mm512_load_ps(t + 16));
      std::memcpy(dst + whole, &h, sizeof h);
    }
  }
}

// A heap buffer (no std:: template here: an AVX-512 compiled copy of an inline library
// function could be the one the linker keeps for the whole program).
class Buffer {
 public:
  explicit Buffer(size_t n) : p_(new uint16_t[n]) {}
  ~Buffer() { delete[] p_; }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  uint16_t* data() { return p_; }

 private:
  uint16_t* p_;
};

// Prefill: tiles of 4 rows x 4 tokens (16 accumulators, 4 activation chunks and one weight
// chunk: 21 of the 32 registers). Decode: 4 rows for the one token, as the AVX2 kernel.
// The tokens are rounded a block (kTokenBlock) at a time into a buffer that stays in L2
// while every weight row of the range meets it (as the AVX2 kernels sweep their blocks), so
// each activation is rounded once per call, not once per row tile.
// The shapes are not tuned beyond one A/B on a Xeon with AVX512_BF16 (see the report).
constexpr int kRows = 4, kTokens = 4;

template <int RN>
void rows_for_tokens(const MatmulArgs& p, const RoundedRows& act, int64_t r0, int64_t r1, int64_t c) {
  int64_t r = r0;
  for (; r + kRows <= r1; r += kRows) micro<kRows, RN>(p, act, r, c);
  for (; r < r1; ++r) micro<1, RN>(p, act, r, c);
}

void tile(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const int64_t stride = (p.k + kChunk - 1) / kChunk * kChunk;
  Buffer buf(static_cast<size_t>((c1 - c0 < kTokenBlock ? c1 - c0 : kTokenBlock) * stride));
  for (int64_t cb = c0; cb < c1; cb += kTokenBlock) {
    const int64_t ce = cb + kTokenBlock < c1 ? cb + kTokenBlock : c1;
    round_rows(p, cb, static_cast<int>(ce - cb), buf.data(), stride);
    const auto at = [&](int64_t c) { return RoundedRows{buf.data() + (c - cb) * stride, stride}; };
    if (ce - cb < kTokens) {
      for (int64_t c = cb; c < ce; ++c) rows_for_tokens<1>(p, at(c), r0, r1, c);
      continue;
    }
    for_each_tile<kRows, kTokens>(
        r0, r1, cb, ce, [&](int64_t r, int64_t c) { micro<kRows, kTokens>(p, at(c), r, c); },
        [&](int64_t r, int rm, int64_t c, int rn) {
          if (rm == kRows) {
            for (int j = 0; j < rn; ++j) micro<kRows, 1>(p, at(c + j), r, c + j);
          } else if (rn == kTokens) {
            for (int i = 0; i < rm; ++i) micro<1, kTokens>(p, at(c), r + i, c);
          } else {
            for (int i = 0; i < rm; ++i)
              for (int j = 0; j < rn; ++j) micro<1, 1>(p, at(c + j), r + i, c + j);
          }
        });
  }
}

}  // namespace

const MatmulKernel* matmul_kernel_bf16() {
  static const MatmulKernel kernel{ActFormat::F32, tile};
  return &kernel;
}

}  // namespace ember::cpu::EMBER_AVX512_NS
