// Q4_0, Q5_0, Q4_1 and Q5_1 weights repacked in groups of 8 rows (built with AVX2 flags;
// see PackedKernel), in the layout of packed_q32_layout.h: the rows' 4-bit code loads, plus
// a plane of fifth bits and/or the rows' offsets.
//
// One 32-byte load gives the same four elements of all 8 rows, which maddubs multiplies by
// those four activations broadcast (codes u unsigned, activations in [-127, 127]), and madd
// turns the int16 pair sums into each row's exact int32 dot S_r:
// 4-bit codes: a block's 8 maddubs add up in int16 (at most 8 * 2 * 15 * 127 = 30480);
// 5-bit codes: only 4 of them (4 * 2 * 31 * 127 = 31496), so a madd per two code loads.
// No per-row reduction is left: the rows finish in one f32 lane each, with s = da * sum(a)
// coming with the activation block (so a bias costs nothing per row):
//   Q4_0, Q5_0 (x = d*(u - B), B = 8, 16):  y_r += d_r * (da * S_r - B * s)   fmsub, fmadd
//   Q4_1, Q5_1 (x = d*u + m):  y_r += (d_r * da) * S_r;  y_r += m_r * s   mul, fmadd, fmadd
// The AVX-512 kernels (matmul_packed_q32_avx512.cpp) take the same f32 steps in the same
// order on the same S_r, so both give bitwise the same outputs, and one token the same as a
// batch. Q4_0's steps are also the row-layout Q4_0 kernel's (matmul_avx2.cpp: bitwise the
// same outputs); for the others the row-layout kernels sum in another order.
#include <immintrin.h>

#include "backend/cpu/matmul_packed_avx2.h"
#include "backend/cpu/packed_q32_layout.h"
#include "backend/cpu/packed_tiles.h"

namespace ember::cpu {

namespace {

using packed32::kCodeLoads;
using packed32::kRows;

inline __m256i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Groups gs[0 .. S) for tokens c .. c+RN-1 (r_end: the matrix's row count, so a short last
// group stores only its rows). S > 1 only for decode (RN = 1): far-apart groups read in
// lockstep (for_each_group_pair). Each group and token goes through the same operations
// whatever S and RN. noinline keeps the prefill tile a call, as before the decode pair was
// added (GCC then inlined it into tile(); the same change cost Q8_0's prefill ~4%).
template <class F, int RN, int S = 1, size_t kDistance = kPrefetchDistance>
[[gnu::noinline]] void micro(const MatmulArgs& p, const int64_t* gs, int64_t r_end, int64_t c) {
  const uint8_t* group[S];
  for (int i = 0; i < S; ++i) group[i] = p.w + gs[i] * p.w_stride;
  const block_q8s* a[RN];
  for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const block_q8s*>(p.a + (c + j) * p.a_stride);
  __m256 acc[S][RN];
  for (int i = 0; i < S; ++i)
    for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
  const __m256i nibble = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
  const __m256i ones = _mm256_set1_epi16(1);
  constexpr int kLoadsPerMadd = F::kFifthBit ? 2 : kCodeLoads;  // int16 bound above
  for (int64_t b = 0; b < p.k / 32; ++b) {
    for (int i = 0; i < S; ++i) {
      const uint8_t* blk = group[i] + b * F::kBlockBytes;
      // Every tile prefetches, not only decode's: a 16-sequence decode step is 4-token tiles
      // that meet each group once, and its weights come from memory (Q4_0 pp16 at
      // EMBER_SIMD=avx2, alternated: 91-95 -> 102-112 t/s; pp256 unchanged within noise).
      // Not for four groups (the avx2-4streams walk, for_each_group_quad).
      if constexpr (S < 4) prefetch_ahead(blk, F::kBlockBytes, kDistance);
      __m256i plane = _mm256_setzero_si256();
      if constexpr (F::kFifthBit) plane = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + F::kPlane));
      // Each token's int16 sums take the maddubs products in order (low then high nibbles of
      // load 0, 1, ...). Loads outer, tokens inner: only one load's two code vectors are
      // live, so the four sums and four accumulators stay in the 16 registers (codes of all
      // four loads at once spilled an accumulator every block). The int16 sums stay exact
      // (bounds above).
      __m256i s16[RN], dot[RN];
      for (int q = 0; q < kCodeLoads; ++q) {
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + F::kCodes + 32 * q));
        __m256i lo = _mm256_and_si256(raw, nibble);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), nibble);
        if constexpr (F::kFifthBit) {  // bit q and bit 4+q of each plane byte, to bit 4
          lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(plane, 4 - q), bit4));
          hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_srli_epi16(plane, q), bit4));
        }
        for (int j = 0; j < RN; ++j) {
          const int8_t* qs = a[j][b].qs;
          const __m256i p_lo = _mm256_maddubs_epi16(lo, broadcast4(qs + 4 * q));
          s16[j] = q % kLoadsPerMadd == 0 ? p_lo : running_add_epi16(s16[j], p_lo);
          s16[j] = running_add_epi16(s16[j], _mm256_maddubs_epi16(hi, broadcast4(qs + 16 + 4 * q)));
          if (q % kLoadsPerMadd == kLoadsPerMadd - 1) {
            const __m256i part = _mm256_madd_epi16(s16[j], ones);
            dot[j] = q == kLoadsPerMadd - 1 ? part : _mm256_add_epi32(dot[j], part);
          }
        }
      }
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + F::kScales)));
      if constexpr (F::kOffset) {
        const __m256 m = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + F::kOffsets)));
        for (int j = 0; j < RN; ++j) {
          const block_q8s& ab = a[j][b];
          const __m256 dd = _mm256_mul_ps(d, _mm256_set1_ps(ab.d));
          acc[i][j] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(dot[j]), acc[i][j]);
          acc[i][j] = _mm256_fmadd_ps(m, _mm256_set1_ps(ab.s), acc[i][j]);
        }
      } else {
        constexpr float kBias = F::kBias;
        for (int j = 0; j < RN; ++j) {
          const block_q8s& ab = a[j][b];
          const __m256 t = _mm256_fmsub_ps(_mm256_set1_ps(ab.d), _mm256_cvtepi32_ps(dot[j]), _mm256_set1_ps(kBias * ab.s));
          acc[i][j] = _mm256_fmadd_ps(d, t, acc[i][j]);
        }
      }
    }
  }
  for (int i = 0; i < S; ++i)
    for (int j = 0; j < RN; ++j)
      store_group_rows(p.y + (c + j) * p.y_stride + gs[i] * kRows, acc[i][j], r_end - gs[i] * kRows);
}

template <class F>
void tile(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  constexpr int RN = 4;
  if (c1 - c0 < RN) {
    decode_group_pairs(p, kRows, r0, r1, c0, c1, micro<F, 1, 2>, micro<F, 1>);
    return;
  }
  for_each_packed_tile<RN>(
      kRows, r0, r1, c0, c1, [&](int64_t g, int64_t c) { micro<F, RN>(p, &g, r1, c); },
      [&](int64_t g, int64_t c) { micro<F, 1>(p, &g, r1, c); });
}

// The avx2-4streams variant (kernel_choice.h): decode reads four far-apart groups at once
// (for_each_group_quad); tiles of 4 tokens or more are tile()'s.
template <class F>
void tile_four_streams(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (c1 - c0 >= 4) return tile<F>(p, r0, r1, c0, c1);
  for_each_group_quad(kRows, r0, r1, c0, c1, [&](const int64_t* gs, int n, int64_t c) {
    n == 4 ? micro<F, 1, 4>(p, gs, r1, c) : n == 2 ? micro<F, 1, 2>(p, gs, r1, c) : micro<F, 1>(p, gs, r1, c);
  });
}

// The avx2-prefetch1k variant (kernel_choice.h): decode's pairs prefetch kNearPrefetchDistance
// ahead; tiles of 4 tokens or more are tile()'s.
template <class F>
void tile_near_prefetch(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (c1 - c0 >= 4) return tile<F>(p, r0, r1, c0, c1);
  decode_group_pairs(p, kRows, r0, r1, c0, c1, micro<F, 1, 2, kNearPrefetchDistance>,
                     micro<F, 1, 1, kNearPrefetchDistance>);
}

template <class F>
constexpr PackedKernel kernel(TileFn walk = tile<F>) {
  return {kRows, packed32::group_bytes<F>, packed32::pack_group<F>, ActFormat::Q8S, walk};
}

}  // namespace

const PackedKernel kPackedQ4_0x8Avx2 = kernel<packed32::Q4_0>();
const PackedKernel kPackedQ5_0x8Avx2 = kernel<packed32::Q5_0>();
const PackedKernel kPackedQ4_1x8Avx2 = kernel<packed32::Q4_1>();
const PackedKernel kPackedQ5_1x8Avx2 = kernel<packed32::Q5_1>();
const PackedKernel kPackedQ4_0x8Avx2FourStreams = kernel<packed32::Q4_0>(tile_four_streams<packed32::Q4_0>);
const PackedKernel kPackedQ5_0x8Avx2FourStreams = kernel<packed32::Q5_0>(tile_four_streams<packed32::Q5_0>);
const PackedKernel kPackedQ4_1x8Avx2FourStreams = kernel<packed32::Q4_1>(tile_four_streams<packed32::Q4_1>);
const PackedKernel kPackedQ5_1x8Avx2FourStreams = kernel<packed32::Q5_1>(tile_four_streams<packed32::Q5_1>);
const PackedKernel kPackedQ4_0x8Avx2NearPrefetch = kernel<packed32::Q4_0>(tile_near_prefetch<packed32::Q4_0>);
const PackedKernel kPackedQ5_0x8Avx2NearPrefetch = kernel<packed32::Q5_0>(tile_near_prefetch<packed32::Q5_0>);
const PackedKernel kPackedQ4_1x8Avx2NearPrefetch = kernel<packed32::Q4_1>(tile_near_prefetch<packed32::Q4_1>);
const PackedKernel kPackedQ5_1x8Avx2NearPrefetch = kernel<packed32::Q5_1>(tile_near_prefetch<packed32::Q5_1>);

}  // namespace ember::cpu
