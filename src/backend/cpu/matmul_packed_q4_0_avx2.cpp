// Q4_0 weights repacked in groups of 8 rows (built with AVX2 flags; see PackedKernel).
//
// Layout of a group, per 32-element block b of the rows (144 bytes, as 8 plain blocks):
//   8 x fp16  the rows' scales d
//   4 x 32 B  load q holds, for row r = 0..7, bytes 4q..4q+3 of that row's codes: low
//             nibbles are elements 4q..4q+3, high nibbles elements 16+4q..16+4q+3.
// So one 32-byte load and a mask give the same four elements of all 8 rows, which
// maddubs multiplies by those four activations broadcast (codes u in [0, 15], activations
// in [-127, 127]): int16 lane pairs, one pair per row, summed over the block's 8 loads stay
// within 8 * 2 * 15 * 127 = 30480; one madd then gives each row's integer dot S_r.
// No per-row reduction is left: the 8 rows finish in one f32 lane each,
//   y_r += d_r * (da * S_r - 8 * s),   s = da * sum(a)  (the -8 bias of the codes),
// which are the same f32 operations, in the same order, as the row-layout Q4_0 kernel, so
// both layouts give bitwise the same outputs, and one token the same as a batch.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_packed_avx2.h"
#include "backend/cpu/packed_tiles.h"

namespace ember::cpu {

namespace {

constexpr int kRows = 8;
constexpr size_t kBlockBytes = kRows * sizeof(block_q4_0);  // 144
constexpr size_t kScaleBytes = kRows * 2;

size_t group_bytes(int64_t k) { return static_cast<size_t>(k / QK4_0) * kBlockBytes; }

void pack_group(const uint8_t* w, size_t w_stride, int n_rows, int64_t k, uint8_t* dst) {
  std::memset(dst, 0, group_bytes(k));  // missing rows: scale 0, codes 0
  for (int64_t b = 0; b < k / QK4_0; ++b) {
    uint8_t* out = dst + b * kBlockBytes;
    for (int r = 0; r < n_rows; ++r) {
      const block_q4_0& blk = reinterpret_cast<const block_q4_0*>(w + r * w_stride)[b];
      std::memcpy(out + 2 * r, &blk.d, 2);
      for (int q = 0; q < 4; ++q) std::memcpy(out + kScaleBytes + 32 * q + 4 * r, blk.qs + 4 * q, 4);
    }
  }
}

inline int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Groups gs[0 .. S) for tokens c .. c+RN-1 (r_end: the matrix's row count, so a short last
// group stores only its rows). S > 1 only for decode (RN = 1): far-apart groups read in
// lockstep (for_each_group_pair). Each group and token goes through the same operations
// whatever S and RN. noinline keeps the prefill tile a call, as before the decode pair was
// added (GCC then inlined it into tile(); the same change cost Q8_0's prefill ~4%).
template <int RN, int S = 1>
[[gnu::noinline]] void micro(const MatmulArgs& p, const int64_t* gs, int64_t r_end, int64_t c) {
  const uint8_t* group[S];
  for (int i = 0; i < S; ++i) group[i] = p.w + gs[i] * p.w_stride;
  const block_q8s* a[RN];
  for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const block_q8s*>(p.a + (c + j) * p.a_stride);
  __m256 acc[S][RN];
  for (int i = 0; i < S; ++i)
    for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
  const __m256i nibble = _mm256_set1_epi8(0x0F);
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < p.k / QK4_0; ++b) {
    for (int i = 0; i < S; ++i) {
      const uint8_t* blk = group[i] + b * kBlockBytes;
      // Every tile prefetches, not only decode's: a 16-sequence decode step is 4-token tiles
      // that meet each group once, and its weights come from memory (pp16 at
      // EMBER_SIMD=avx2, alternated: 91-95 -> 102-112 t/s; pp256 unchanged within noise).
      prefetch_ahead(blk, kBlockBytes);
      // Each token's int16 sum s[j] takes the eight maddubs products in order (low then
      // high nibbles of load 0, 1, 2, 3). Loads outer, tokens inner: only one load's two
      // code vectors are live, so the four sums and four accumulators stay in the 16
      // registers (codes of all four loads at once spilled an accumulator every block).
      // Saturating adds never saturate here (bound above) but keep GCC from reassociating
      // the sums into a tree of every maddubs result at once.
      __m256i s[RN];
      for (int q = 0; q < 4; ++q) {
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kScaleBytes + 32 * q));
        const __m256i lo = _mm256_and_si256(raw, nibble);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble);
        for (int j = 0; j < RN; ++j) {
          const int8_t* qs = a[j][b].qs;
          const __m256i p_lo = _mm256_maddubs_epi16(lo, _mm256_set1_epi32(load_i32(qs + 4 * q)));
          s[j] = q == 0 ? p_lo : _mm256_adds_epi16(s[j], p_lo);
          s[j] = _mm256_adds_epi16(s[j], _mm256_maddubs_epi16(hi, _mm256_set1_epi32(load_i32(qs + 16 + 4 * q))));
        }
      }
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)));
      for (int j = 0; j < RN; ++j) {
        const block_q8s& ab = a[j][b];
        const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(s[j], ones));
        const __m256 t = _mm256_fmsub_ps(_mm256_set1_ps(ab.d), dot, _mm256_set1_ps(8.0f * ab.s));
        acc[i][j] = _mm256_fmadd_ps(d, t, acc[i][j]);
      }
    }
  }
  for (int i = 0; i < S; ++i)
    for (int j = 0; j < RN; ++j)
      store_group_rows(p.y + (c + j) * p.y_stride + gs[i] * kRows, acc[i][j], r_end - gs[i] * kRows);
}

void tile(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  constexpr int RN = 4;
  if (c1 - c0 < RN) {
    decode_group_pairs(p, kRows, r0, r1, c0, c1, micro<1, 2>, micro<1>);
    return;
  }
  for_each_packed_tile<RN>(
      kRows, r0, r1, c0, c1, [&](int64_t g, int64_t c) { micro<RN>(p, &g, r1, c); },
      [&](int64_t g, int64_t c) { micro<1>(p, &g, r1, c); });
}

}  // namespace

const PackedKernel kPackedQ4_0x8Avx2{kRows, group_bytes, pack_group, ActFormat::Q8S, tile};

}  // namespace ember::cpu
