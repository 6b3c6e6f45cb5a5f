// AVX2 kernels (built with -mavx2 -mfma -mf16c; called only when cpu_features().avx2).
// Everything here has internal linkage and no shared inline helpers are used, so no
// AVX2-compiled copy of an inline function can be picked by the linker for other code.
//
// Every family computes micro-tiles of RM weight rows x RN activation rows so each decoded
// weight chunk is used RN times and each activation chunk RM times from registers:
// - 32-element formats: codes x q8s activations with maddubs (which needs one unsigned
//   operand: Q8_0 and MXFP4 (codes looked up by pshufb) use |w| and a with w's sign; the 4/5-bit codes are unsigned already and
//   their bias is subtracted in int16), one f32 scale per block pair; the _1 formats add
//   m * (da * sum a) per block. Q4_0 has its own 8-row tiles (Q4_0Tiles, see there).
// - k-quants: unsigned codes u (the signed formats are shifted by their bias, which goes
//   into the min term) x Q8_K with maddubs, weighted by the sub-block scales in int16 and
//   summed in int32 over a whole super-block; one f32 scale per super-block pair, minus
//   dmin * sum_g m_g * bsum_g.
// - float weights: converted to f32 in registers, FMA with the f32 activations.
#include <cmath>
#include <immintrin.h>

#include <cstring>
#include <utility>

#include "backend/cpu/matmul_kernels.h"

namespace ember::cpu {

namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float half(uint16_t h) { return _cvtsh_ss(h); }

inline __m256i srl16(__m256i v, int n) { return _mm256_srl_epi16(v, _mm_cvtsi32_si128(n)); }

inline __m256i loadu(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Two 16-byte nibble planes of one 32-element block: low nibbles are elements 0..15,
// high nibbles 16..31.
inline __m256i nibbles_32(const uint8_t* qs) {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0F));
}

// 0x10 in byte j where bit j of the 32-bit little-endian qh is set.
inline __m256i fifth_bits(const uint8_t qh[4]) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  // byte j takes byte j / 8 of `bits`, then tests its bit j % 8.
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i mask = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, mask), mask);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// ---------------------------------------------------------------- 32-element formats
// load() returns the block's 32 codes; kSigned formats are x = d * q, the others x = d*u + m.
// kBias: Q5_0 stays unsigned, x = d * (u - kBias): u.a - kBias * sum(a) is formed in
// int16 with one maddubs per activation block shared by all rows (cheaper than the sign
// trick). kHasMin: the _1 formats' offset m multiplies the activation block sum.
struct DecQ4_1 {
  using Block = block_q4_1;
  static constexpr bool kSigned = false;
  static constexpr int kBias = 0;
  static constexpr bool kHasMin = true;
  static __m256i load(const Block& b, float* d, float* m) {
    *d = half(b.d);
    *m = half(b.m);
    return nibbles_32(b.qs);
  }
};
struct DecQ5_0 {
  using Block = block_q5_0;
  static constexpr bool kSigned = false;
  static constexpr int kBias = 16;
  static constexpr bool kHasMin = false;
  static __m256i load(const Block& b, float* d, float*) {
    *d = half(b.d);
    return _mm256_or_si256(nibbles_32(b.qs), fifth_bits(b.qh));
  }
};
struct DecQ5_1 {
  using Block = block_q5_1;
  static constexpr bool kSigned = false;
  static constexpr int kBias = 0;
  static constexpr bool kHasMin = true;
  static __m256i load(const Block& b, float* d, float* m) {
    *d = half(b.d);
    *m = half(b.m);
    return _mm256_or_si256(nibbles_32(b.qs), fifth_bits(b.qh));
  }
};
struct DecQ8_0 {
  using Block = block_q8_0;
  static constexpr bool kSigned = true;
  static constexpr int kBias = 0;
  static constexpr bool kHasMin = false;
  static __m256i load(const Block& b, float* d, float*) {
    *d = half(b.d);
    return loadu(b.qs);
  }
};

// MXFP4: the doubled e2m1 code points are small signed integers; one pshufb looks the 32
// codes up, and the block's scale is half the E8M0 one (kMxfp4Values is doubled).
struct DecMXFP4 {
  using Block = block_mxfp4;
  static constexpr bool kSigned = true;
  static constexpr int kBias = 0;
  static constexpr bool kHasMin = false;
  static __m256i load(const Block& b, float* d, float*) {
    *d = mxfp4_half_scale(b.e);
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values)));
    return _mm256_shuffle_epi8(table, nibbles_32(b.qs));
  }
};

template <class Dec>
struct Family32 {
  using Block = typename Dec::Block;
  template <int RM, int RN>
  static void micro(const MatmulArgs& p, int64_t r, int64_t c) {
    const Block* w[RM];
    const block_q8s* a[RN];
    for (int i = 0; i < RM; ++i) w[i] = reinterpret_cast<const Block*>(p.w + (r + i) * p.w_stride);
    for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const block_q8s*>(p.a + (c + j) * p.a_stride);
    __m256 acc[RM][RN];
    float macc[RM][RN];
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) {
        acc[i][j] = _mm256_setzero_ps();
        macc[i][j] = 0.0f;
      }
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < p.k / 32; ++b) {
      __m256i q[RM], uq[RM];
      float dw[RM], mw[RM];
      for (int i = 0; i < RM; ++i) {
        q[i] = Dec::load(w[i][b], &dw[i], &mw[i]);
        uq[i] = Dec::kSigned ? _mm256_sign_epi8(q[i], q[i]) : q[i];  // |q| for maddubs
      }
      for (int j = 0; j < RN; ++j) {
        const block_q8s& ab = a[j][b];
        const __m256i av = loadu(ab.qs);
        __m256i bias = _mm256_setzero_si256();
        if constexpr (Dec::kBias != 0) bias = _mm256_maddubs_epi16(_mm256_set1_epi8(Dec::kBias), av);
        for (int i = 0; i < RM; ++i) {
          const __m256i sa = Dec::kSigned ? _mm256_sign_epi8(av, q[i]) : av;
          __m256i pairs = _mm256_maddubs_epi16(uq[i], sa);
          if constexpr (Dec::kBias != 0) pairs = _mm256_sub_epi16(pairs, bias);
          const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones));
          acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(dw[i] * ab.d), dot, acc[i][j]);
          // An explicit fma: left to the compiler, whether the product is fused depended on
          // the tile shape, and a token's result on its place in the batch (Q4_1, Q5_1).
          if constexpr (Dec::kHasMin) macc[i][j] = std::fma(mw[i], ab.s, macc[i][j]);
        }
      }
    }
    for (int j = 0; j < RN; ++j)
      for (int i = 0; i < RM; ++i) p.y[(c + j) * p.y_stride + r + i] = hsum(acc[i][j]) + macc[i][j];
  }
};

// Q4_0 has its own tiles of R = 8 (or 4) rows x RN tokens: the format is compute-bound on
// unpacking and per-block float work, and folding rows together cuts both. Per block and
// token, each row's 16 maddubs pair sums (codes u in [0, 15] x a in [-127, 127]) are folded
// across rows by a phaddw tree: R = 8 gives one int16 lane per row and half block, at most
// 16 * 15 * 127 = 30480 (no overflow); R = 4 stops one level earlier and pairs with madd.
// One cvt and two FMAs then finish all R rows: y_i += d_i * (da * S_i - 8 * s), where
// s = da * sum(a) comes with the activation block, so the -8 bias costs nothing per row.
// Every output is the same sequence of f32 operations on exact integer block sums whatever
// the tile shape, so one-token decode gives bitwise the batch's result (speculative
// verification relies on that).
// One f32 lane per row: a 256-bit accumulator for 8-row tiles, 128-bit for 4-row ones.
template <int R> struct F32Lanes { using type = __m256; };
template <> struct F32Lanes<4> { using type = __m128; };

struct Q4_0Tiles {
  // The block's codes: low nibbles (elements 0..15) in the low half, high nibbles in the
  // high half, from one broadcast load and one per-half variable shift.
  static __m256i codes(const block_q4_0& b) {
    const __m256i t = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs)));
    return _mm256_and_si256(_mm256_srlv_epi64(t, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0F));
  }
  // The R rows' fp16 scales of block b, in lanes 0..R-1.
  template <size_t... I>
  static __m128i scales(const block_q4_0* const* w, int64_t b, std::index_sequence<I...>) {
    __m128i h = _mm_setzero_si128();
    ((h = _mm_insert_epi16(h, w[I][b].d, static_cast<int>(I))), ...);
    return h;
  }
  // Outputs of rows r .. r+n_rows-1 (n_rows <= R; the missing rows repeat the last one and
  // are not stored) for tokens c .. c+RN-1.
  template <int R, int RN>
  static void micro(const MatmulArgs& p, int64_t r, int n_rows, int64_t c) {
    static_assert(R == 4 || R == 8, "the phaddw tree folds 4 or 8 rows");
    const block_q4_0* w[R];
    const block_q8s* a[RN];
    for (int i = 0; i < R; ++i)
      w[i] = reinterpret_cast<const block_q4_0*>(p.w + (r + (i < n_rows ? i : n_rows - 1)) * p.w_stride);
    for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const block_q8s*>(p.a + (c + j) * p.a_stride);
    using F = typename F32Lanes<R>::type;
    F acc[RN];
    for (int j = 0; j < RN; ++j) acc[j] = F{};
    for (int64_t b = 0; b < p.k / 32; ++b) {
      __m256i u[R];
      for (int i = 0; i < R; ++i) u[i] = codes(w[i][b]);
      const __m128i d16 = scales(w, b, std::make_index_sequence<R>{});
      for (int j = 0; j < RN; ++j) {
        const block_q8s& ab = a[j][b];
        const __m256i av = loadu(ab.qs);
        __m256i s[R];
        for (int i = 0; i < R; ++i) s[i] = _mm256_maddubs_epi16(u[i], av);
        for (int n = R; n > 1; n /= 2)
          for (int i = 0; i < n / 2; ++i) s[i] = _mm256_hadd_epi16(s[2 * i], s[2 * i + 1]);
        if constexpr (R == 8) {
          // s[0] halves: [row0 .. row7] over elements 0..15 / 16..31
          const __m256i sum = _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(s[0])),
                                               _mm256_cvtepi16_epi32(_mm256_extracti128_si256(s[0], 1)));
          const __m256 t = _mm256_fmsub_ps(_mm256_set1_ps(ab.d), _mm256_cvtepi32_ps(sum), _mm256_set1_ps(8.0f * ab.s));
          acc[j] = _mm256_fmadd_ps(_mm256_cvtph_ps(d16), t, acc[j]);
        } else {
          // s[0] halves: [r0 r0 r1 r1 r2 r2 r3 r3]; madd pairs them into one int32 per row
          const __m256i m = _mm256_madd_epi16(s[0], _mm256_set1_epi16(1));
          const __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
          const __m128 t = _mm_fmsub_ps(_mm_set1_ps(ab.d), _mm_cvtepi32_ps(sum), _mm_set1_ps(8.0f * ab.s));
          acc[j] = _mm_fmadd_ps(_mm_cvtph_ps(d16), t, acc[j]);
        }
      }
    }
    for (int j = 0; j < RN; ++j) {
      alignas(32) float out[R];
      if constexpr (R == 8)
        _mm256_store_ps(out, acc[j]);
      else
        _mm_store_ps(out, acc[j]);
      for (int i = 0; i < n_rows; ++i) p.y[(c + j) * p.y_stride + r + i] = out[i];
    }
  }
  // Rows r .. r+rm-1 for tokens c .. c+RN-1, in 8-row tiles and one padded 4-row tile.
  template <int RN>
  static void rows(const MatmulArgs& p, int64_t r, int64_t rm, int64_t c) {
    for (; rm >= 8; r += 8, rm -= 8) micro<8, RN>(p, r, 8, c);
    for (; rm > 0; r += 4, rm -= 4) micro<4, RN>(p, r, static_cast<int>(rm < 4 ? rm : 4), c);
  }
  static void tile(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    constexpr int RN = 4;
    for_each_tile<8, RN>(
        r0, r1, c0, c1, [&](int64_t r, int64_t c) { micro<8, RN>(p, r, 8, c); },
        [&](int64_t r, int rm, int64_t c, int rn) {
          if (rn == RN) {
            rows<RN>(p, r, rm, c);
          } else {
            for (int j = 0; j < rn; ++j) rows<1>(p, r, rm, c + j);
          }
        });
  }
};

// ---------------------------------------------------------------- k-quants
// A decoder gives, per super-block: d and dmin (x = d*sc*u - dmin*m per group), codes(j):
// the 32 unsigned codes of elements 32j .. 32j+31, scales(j): their int16 scales as
// maddubs pairs them (lanes 0-7 elements 32j..32j+15, lanes 8-15 the rest), and
// mins_dot(bsums): 8 int32 lanes summing to sum_g m_g * bsum_g.

// Shuffle controls that broadcast int16 scales held in both 128-bit lanes of a register
// (constant tables, not vector statics: nothing AVX2 may run before the CPU check).
// per32[j]: scale j everywhere. per16[q]: scale 2q in the low lane, 2q+1 in the high one.
struct ScaleShuffles {
  alignas(32) uint8_t per32[8][32];
  alignas(32) uint8_t per16[4][32];
};
constexpr ScaleShuffles make_shuffles() {
  ScaleShuffles t{};
  for (int j = 0; j < 8; ++j)
    for (int b = 0; b < 32; ++b) t.per32[j][b] = static_cast<uint8_t>(2 * j + (b & 1));
  for (int q = 0; q < 4; ++q)
    for (int b = 0; b < 32; ++b) t.per16[q][b] = static_cast<uint8_t>(4 * q + (b >= 16 ? 2 : 0) + (b & 1));
  return t;
}
constexpr ScaleShuffles kShuf = make_shuffles();

// Eight 6-bit (scale, min) pairs of Q4_K/Q5_K: bytes 0-3 hold scales 0-3 (low 6 bits), bytes
// 4-7 mins 0-3; scales/mins 4-7 take their low nibbles from bytes 8-11 and their top two
// bits from the top bits of bytes 0-3 / 4-7. Word-wide, all eight at once.
struct Scales32 {
  float d, dmin;
  __m256i sc;    // the 8 scales as int16, in both 128-bit lanes
  __m256i mins;  // the 8 mins as int32
  void load_k4(const uint8_t* s, uint16_t dh, uint16_t dminh) {
    d = half(dh);
    dmin = half(dminh);
    uint32_t a, b, c;
    std::memcpy(&a, s, 4);
    std::memcpy(&b, s + 4, 4);
    std::memcpy(&c, s + 8, 4);
    const uint64_t scales = (a & 0x3f3f3f3fu) | (uint64_t{(c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u)} << 32);
    const uint64_t mins8 = (b & 0x3f3f3f3fu) | (uint64_t{((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u)} << 32);
    sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(scales))));
    mins = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(mins8)));
  }
  __m256i scales(int j) const { return _mm256_shuffle_epi8(sc, loadu(kShuf.per32[j])); }
  // sum_j m_j * (bsum_2j + bsum_2j+1)
  __m256i mins_dot(__m256i bsums) const {
    return _mm256_mullo_epi32(mins, _mm256_madd_epi16(bsums, _mm256_set1_epi16(1)));
  }
};

// Sixteen int16 scales and mins, one per 16-element group (Q2_K, Q3_K, Q6_K).
struct Scales16 {
  float d, dmin;
  __m256i lo, hi;  // scales 0-7 / 8-15 as int16, in both lanes
  __m256i m;       // the 16 mins as int16
  void set(const int16_t sc[16], const int16_t mn[16]) {
    lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
    hi = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + 8)));
    m = loadu(mn);
  }
  __m256i scales(int j) const { return _mm256_shuffle_epi8(j < 4 ? lo : hi, loadu(kShuf.per16[j % 4])); }
  __m256i mins_dot(__m256i bsums) const { return _mm256_madd_epi16(m, bsums); }
};

struct DecQ4_K : Scales32 {
  using Block = block_q4_K;
  const uint8_t* qs;
  void load(const Block& b) {
    load_k4(b.scales, b.d, b.dmin);
    qs = b.qs;
  }
  __m256i codes(int j) const {
    return _mm256_and_si256(srl16(loadu(qs + 32 * (j / 2)), 4 * (j % 2)), _mm256_set1_epi8(0x0F));
  }
};

struct DecQ5_K : Scales32 {
  using Block = block_q5_K;
  const uint8_t* qs;
  __m256i qh;
  void load(const Block& b) {
    load_k4(b.scales, b.d, b.dmin);
    qs = b.qs;
    qh = loadu(b.qh);
  }
  __m256i codes(int j) const {
    const __m256i lo = _mm256_and_si256(srl16(loadu(qs + 32 * (j / 2)), 4 * (j % 2)), _mm256_set1_epi8(0x0F));
    const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(srl16(qh, j), _mm256_set1_epi8(1)), 4);
    return _mm256_or_si256(lo, hi);
  }
};

struct DecQ6_K : Scales16 {
  using Block = block_q6_K;
  const uint8_t* ql;
  const uint8_t* qh;
  void load(const Block& b) {
    d = half(b.d);
    dmin = d;  // u = q + 32, so x = d*sc*u - d*(32*sc)
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)));
    lo = _mm256_permute2x128_si256(sc16, sc16, 0x00);
    hi = _mm256_permute2x128_si256(sc16, sc16, 0x11);
    m = _mm256_slli_epi16(sc16, 5);
    ql = b.ql;
    qh = b.qh;
  }
  __m256i codes(int j) const {
    const int h = j / 4, k = j % 4;
    const __m256i lo = _mm256_and_si256(srl16(loadu(ql + 64 * h + 32 * (k & 1)), 4 * (k >> 1)), _mm256_set1_epi8(0x0F));
    const __m256i hi = _mm256_and_si256(srl16(loadu(qh + 32 * h), 2 * k), _mm256_set1_epi8(3));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
  }
};

struct DecQ2_K : Scales16 {
  using Block = block_q2_K;
  const uint8_t* qs;
  void load(const Block& b) {
    d = half(b.d);
    dmin = half(b.dmin);
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    const __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(packed, _mm_set1_epi8(15)));
    lo = _mm256_permute2x128_si256(sc16, sc16, 0x00);
    hi = _mm256_permute2x128_si256(sc16, sc16, 0x11);
    m = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(15)));
    qs = b.qs;
  }
  __m256i codes(int j) const {
    return _mm256_and_si256(srl16(loadu(qs + 32 * (j / 4)), 2 * (j % 4)), _mm256_set1_epi8(3));
  }
};

struct DecQ3_K : Scales16 {
  using Block = block_q3_K;
  const uint8_t* qs;
  const uint8_t* hmask;
  void load(const Block& b) {
    d = half(b.d);
    dmin = d;  // u = q + 4, so x = d*sc*u - d*(4*sc)
    int16_t sc[16], mn[16];
    for (int g = 0; g < 16; ++g) {
      const int low = (b.scales[g % 8] >> (4 * (g / 8))) & 15;
      const int high = (b.scales[8 + g % 4] >> (2 * (g / 4))) & 3;
      sc[g] = static_cast<int16_t>((low | (high << 4)) - 32);
      mn[g] = static_cast<int16_t>(4 * sc[g]);
    }
    set(sc, mn);
    qs = b.qs;
    hmask = b.hmask;
  }
  __m256i codes(int j) const {
    const int h = j / 4, k = j % 4;
    const __m256i lo = _mm256_and_si256(srl16(loadu(qs + 32 * h), 2 * k), _mm256_set1_epi8(3));
    const __m256i hi = _mm256_and_si256(srl16(loadu(hmask), 4 * h + k), _mm256_set1_epi8(1));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 2));
  }
};

template <class Dec>
struct FamilyK {
  using Block = typename Dec::Block;
  template <int RM, int RN>
  static void micro(const MatmulArgs& p, int64_t r, int64_t c) {
    const Block* w[RM];
    const block_q8_K* a[RN];
    for (int i = 0; i < RM; ++i) w[i] = reinterpret_cast<const Block*>(p.w + (r + i) * p.w_stride);
    for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const block_q8_K*>(p.a + (c + j) * p.a_stride);
    __m256 acc[RM][RN];
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < p.k / QK_K; ++b) {
      Dec dec[RM];
      for (int i = 0; i < RM; ++i) dec[i].load(w[i][b]);
      __m256i isum[RM][RN];
      for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) isum[i][j] = _mm256_setzero_si256();
      for (int ch = 0; ch < QK_K / 32; ++ch) {
        __m256i av[RN];
        for (int j = 0; j < RN; ++j) av[j] = loadu(a[j][b].qs + 32 * ch);
        for (int i = 0; i < RM; ++i) {
          const __m256i u = dec[i].codes(ch), s = dec[i].scales(ch);
          for (int j = 0; j < RN; ++j)
            isum[i][j] = _mm256_add_epi32(isum[i][j], _mm256_madd_epi16(_mm256_maddubs_epi16(u, av[j]), s));
        }
      }
      for (int j = 0; j < RN; ++j) {
        const __m256i bsums = loadu(a[j][b].bsums);
        for (int i = 0; i < RM; ++i) {
          const __m256 mins = _mm256_cvtepi32_ps(dec[i].mins_dot(bsums));
          acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(dec[i].d * a[j][b].d), _mm256_cvtepi32_ps(isum[i][j]), acc[i][j]);
          acc[i][j] = _mm256_fnmadd_ps(_mm256_set1_ps(dec[i].dmin * a[j][b].d), mins, acc[i][j]);
        }
      }
    }
    for (int j = 0; j < RN; ++j)
      for (int i = 0; i < RM; ++i) p.y[(c + j) * p.y_stride + r + i] = hsum(acc[i][j]);
  }
};

// ---------------------------------------------------------------- float weights
template <DType T>
struct FamilyFloat {
  static __m256 load8(const uint8_t* row, int64_t e) {
    if constexpr (T == DType::F32) {
      return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + e);
    } else {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + e));
      if constexpr (T == DType::F16) return _mm256_cvtph_ps(h);
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));  // bf16: top half of f32
    }
  }
  static float load1(const uint8_t* row, int64_t e) {
    if constexpr (T == DType::F32) return reinterpret_cast<const float*>(row)[e];
    const uint16_t h = reinterpret_cast<const uint16_t*>(row)[e];
    if constexpr (T == DType::F16) return half(h);
    uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  template <int RM, int RN>
  static void micro(const MatmulArgs& p, int64_t r, int64_t c) {
    const uint8_t* w[RM];
    const float* a[RN];
    for (int i = 0; i < RM; ++i) w[i] = p.w + (r + i) * p.w_stride;
    for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const float*>(p.a + (c + j) * p.a_stride);
    __m256 acc[RM][RN];
    for (int i = 0; i < RM; ++i)
      for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
    const int64_t k8 = p.k & ~int64_t{7};
    for (int64_t e = 0; e < k8; e += 8) {
      __m256 wv[RM];
      for (int i = 0; i < RM; ++i) wv[i] = load8(w[i], e);
      for (int j = 0; j < RN; ++j) {
        const __m256 av = _mm256_loadu_ps(a[j] + e);
        for (int i = 0; i < RM; ++i) acc[i][j] = _mm256_fmadd_ps(wv[i], av, acc[i][j]);
      }
    }
    for (int j = 0; j < RN; ++j)
      for (int i = 0; i < RM; ++i) {
        float s = hsum(acc[i][j]);
        for (int64_t e = k8; e < p.k; ++e) s += load1(w[i], e) * a[j][e];
        p.y[(c + j) * p.y_stride + r + i] = s;
      }
  }
};

// Runs Fam::micro over a range: full RM x RN tiles, edges with the 1-row / 1-token variants.
template <class Fam, int RM, int RN>
void tile(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (c1 - c0 < RN) {
    // Too few tokens for a full tile (decode): matvec per token, 4 rows at a time, which
    // measured faster than RM rows when nothing is shared across tokens.
    for (int64_t c = c0; c < c1; ++c) {
      int64_t r = r0;
      for (; r + 4 <= r1; r += 4) Fam::template micro<4, 1>(p, r, c);
      for (; r < r1; ++r) Fam::template micro<1, 1>(p, r, c);
    }
    return;
  }
  for_each_tile<RM, RN>(
      r0, r1, c0, c1, [&](int64_t r, int64_t c) { Fam::template micro<RM, RN>(p, r, c); },
      [&](int64_t r, int rm, int64_t c, int rn) {
        if (rm == RM) {
          for (int j = 0; j < rn; ++j) Fam::template micro<RM, 1>(p, r, c + j);
        } else if (rn == RN) {
          for (int i = 0; i < rm; ++i) Fam::template micro<1, RN>(p, r + i, c);
        } else {
          for (int i = 0; i < rm; ++i)
            for (int j = 0; j < rn; ++j) Fam::template micro<1, 1>(p, r + i, c + j);
        }
      });
}

// Micro-tile shapes (rows x tokens), chosen by measurement on Zen (see bench-ops).
#ifndef EMBER_TILE_F
#define EMBER_TILE_F 3, 4
#endif
#ifndef EMBER_TILE_32
#define EMBER_TILE_32 3, 4
#endif
#ifndef EMBER_TILE_K
#define EMBER_TILE_K 3, 4
#endif
const MatmulKernel kF32{ActFormat::F32, tile<FamilyFloat<DType::F32>, EMBER_TILE_F>};
const MatmulKernel kF16{ActFormat::F32, tile<FamilyFloat<DType::F16>, EMBER_TILE_F>};
const MatmulKernel kBF16{ActFormat::F32, tile<FamilyFloat<DType::BF16>, EMBER_TILE_F>};
const MatmulKernel kQ4_0{ActFormat::Q8S, Q4_0Tiles::tile};
const MatmulKernel kQ4_1{ActFormat::Q8S, tile<Family32<DecQ4_1>, EMBER_TILE_32>};
const MatmulKernel kQ5_0{ActFormat::Q8S, tile<Family32<DecQ5_0>, EMBER_TILE_32>};
const MatmulKernel kQ5_1{ActFormat::Q8S, tile<Family32<DecQ5_1>, EMBER_TILE_32>};
const MatmulKernel kQ8_0{ActFormat::Q8S, tile<Family32<DecQ8_0>, EMBER_TILE_32>};
const MatmulKernel kMXFP4{ActFormat::Q8S, tile<Family32<DecMXFP4>, EMBER_TILE_32>};
const MatmulKernel kQ2_K{ActFormat::Q8K, tile<FamilyK<DecQ2_K>, EMBER_TILE_K>};
const MatmulKernel kQ3_K{ActFormat::Q8K, tile<FamilyK<DecQ3_K>, EMBER_TILE_K>};
const MatmulKernel kQ4_K{ActFormat::Q8K, tile<FamilyK<DecQ4_K>, EMBER_TILE_K>};
const MatmulKernel kQ5_K{ActFormat::Q8K, tile<FamilyK<DecQ5_K>, EMBER_TILE_K>};
const MatmulKernel kQ6_K{ActFormat::Q8K, tile<FamilyK<DecQ6_K>, EMBER_TILE_K>};

}  // namespace

const MatmulKernel* matmul_kernel_avx2(DType w) {
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
