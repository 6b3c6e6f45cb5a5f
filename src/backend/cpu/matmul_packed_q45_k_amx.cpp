// Packed Q4_K and Q5_K with AMX int8 (see matmul_packed_amx.h): the groups of
// packed_q45_k_avx2.h (per super-block a 128-byte head of fp16 d, dmin and the packed 6-bit
// scales, then the codes as the format's policy in packed_q45_k_avx512.h unpacks them: load q
// of sub-block pair sp gives elements 4q..4q+3 of sub-blocks 2sp and 2sp+1 of 16 rows).
//
// The AVX-512 kernel sums a super-block as isum = sum_g sc_g * S_g, one int32 dot S_g per
// sub-block of 32. Storing 8 dot tiles per super-block would cost more than it saves, so the
// 6-bit scale goes into the weights instead, split so that every product fits a byte:
// sc = hi << s | lo, with s = 4 for Q4_K (codes u <= 15: u * lo <= 225, u * hi <= 45) and
// s = 3 for Q5_K (u <= 31: u * lo, u * hi <= 217). The staged B tiles hold the bytes u * lo
// and u * hi; two tile sums over the whole super-block (tdpbsud: signed activations,
// unsigned weights) give
//   C_lo = sum_g lo_g * S_g,  C_hi = sum_g hi_g * S_g,  isum = C_lo + (C_hi << s)
// exactly (|C_lo| <= 256 * 225 * 127 < 2^23): the AVX-512 kernel's integer. The mins term and
// the f32 steps
//   y_r += d_r * da * isum_r - dmin_r * da * M_r
// are that kernel's (packed_q45_k_avx512.h), in its order: bitwise the same outputs.
#include "backend/cpu/avx512_intrinsics.h"
#define EMBER_AMX_KERNEL
#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/matmul_packed_amx.h"
#include "backend/cpu/matmul_packed_avx512.h"
#include "backend/cpu/packed_q45_k_avx512.h"

namespace ember::cpu::amx {

namespace {

namespace simd512 = avx512::simd512;
namespace q45x16 = avx512::q45x16;
using q45x16::mins_dot;
using q45x16::RowScales16;

// A sub-block's scale part (lo or hi) of each row as the int16 pair of its dword, for mullo:
// every product u * part fits its byte, so the 16-bit products carry nothing across bytes.
inline __m512i scale_words(__m512i part) { return _mm512_or_si512(part, _mm512_slli_epi32(part, 16)); }

// Codes: the format's policy (q45x16::Q4KCodes16, Q5KCodes16); kScaleShift: s above.
template <class Codes, int kScaleShift>
struct Q45KTiles {
  static constexpr size_t kSuperBytes = q45::kHeadBytes + Codes::kBytes;
  static_assert(kSuperBytes == kGroupRows * sizeof(typename Codes::Block), "the AVX2 kernel's groups");
  static constexpr size_t kTileBytes = 16 * 64;             // one B tile: 16 x 64 B
  static constexpr size_t kStagedBytes = 8 * kTileBytes;    // per super-block: (lo, hi) x 4 pairs
  static constexpr int kMaxTokenTiles = 2;
  static constexpr int kParts = 4;  // a pair of sub-blocks each
  // Tiles: 0, 1 the activations of two 16-token tiles (16 x 64 B: a pair of sub-blocks); 2, 3
  // the weights times lo and hi (16 x 64 B); 4 + 2i, 5 + 2i the sums C_lo, C_hi of token tile
  // i. Four independent sums keep the tile unit busy (a tdp waits for the one before it into
  // the same tile).
  static constexpr TileConfig kConfig = TileConfig{}
                                            .tile(0, kTileTokens, 64)
                                            .tile(1, kTileTokens, 64)
                                            .tile(2, 16, 64)
                                            .tile(3, 16, 64)
                                            .tile(4, kTileTokens, 64)
                                            .tile(5, kTileTokens, 64)
                                            .tile(6, kTileTokens, 64)
                                            .tile(7, kTileTokens, 64);

  static int64_t blocks(int64_t k) { return k / QK_K; }

  // Super-block b's B tiles: tile 2sp + h holds pair sp's codes times the h part of the
  // scales (rows 0-7 of the tile sub-block 2sp, rows 8-15 sub-block 2sp+1).
  static void stage(const MatmulArgs&, const GroupPair& pr, int64_t b, uint8_t* out) {
    const uint8_t* lo = pr.lo + b * kSuperBytes;
    const uint8_t* hi = pr.hi + b * kSuperBytes;
    const RowScales16 scales(lo + q45::kScaleOff, hi + q45::kScaleOff);
    const __m512i low = _mm512_set1_epi32((1 << kScaleShift) - 1);
    for (int sp = 0; sp < 4; ++sp) {
      const __m512i sc0 = scales.scale(2 * sp), sc1 = scales.scale(2 * sp + 1);
      const __m512i lo0 = scale_words(_mm512_and_si512(sc0, low)), lo1 = scale_words(_mm512_and_si512(sc1, low));
      const __m512i hi0 = scale_words(_mm512_srli_epi32(sc0, kScaleShift));
      const __m512i hi1 = scale_words(_mm512_srli_epi32(sc1, kScaleShift));
      uint8_t* tile_lo = out + (2 * sp) * kTileBytes;
      uint8_t* tile_hi = tile_lo + kTileBytes;
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) {
        __m512i u0, u1;
        Codes::unpack(lo + q45::kHeadBytes, hi + q45::kHeadBytes, sp, q, u0, u1);
        _mm512_store_si512(tile_lo + 64 * q, _mm512_mullo_epi16(u0, lo0));
        _mm512_store_si512(tile_lo + 64 * (8 + q), _mm512_mullo_epi16(u1, lo1));
        _mm512_store_si512(tile_hi + 64 * q, _mm512_mullo_epi16(u0, hi0));
        _mm512_store_si512(tile_hi + 64 * (8 + q), _mm512_mullo_epi16(u1, hi1));
      }
    }
  }

  // One token tile's C_lo and C_hi of a super-block: 16 x 16 int32 each.
  struct Sums {
    alignas(64) int32_t lo[kTileTokens * 16];
    alignas(64) int32_t hi[kTileTokens * 16];
  };

  template <int NT>
  static void start(const MatmulArgs& p, const uint8_t* staged, int64_t c, int64_t b, int sp) {
    const uint8_t* act = p.a + c * p.a_stride + b * sizeof(block_q8_K) + offsetof(block_q8_K, qs) + 64 * sp;
    const uint8_t* tiles = staged + b * kStagedBytes + (2 * sp) * kTileBytes;
    if (sp == 0) {
      tile_zero<4>();
      tile_zero<5>();
      if constexpr (NT == 2) {
        tile_zero<6>();
        tile_zero<7>();
      }
    }
    tile_load<0>(act, p.a_stride);
    tile_load<2>(tiles, 64);
    tile_load<3>(tiles + kTileBytes, 64);
    tile_dot_su<4, 0, 2>();
    tile_dot_su<5, 0, 3>();
    if constexpr (NT == 2) {
      tile_load<1>(act + kTileTokens * p.a_stride, p.a_stride);
      tile_dot_su<6, 1, 2>();
      tile_dot_su<7, 1, 3>();
    }
  }

  template <int NT>
  static void store(Sums* out) {
    tile_store<4>(out[0].lo, 64);
    tile_store<5>(out[0].hi, 64);
    if constexpr (NT == 2) {
      tile_store<6>(out[1].lo, 64);
      tile_store<7>(out[1].hi, 64);
    }
  }

  struct Finish {
    __m512i mins[4];
    __m512 d, dmin;
    Finish(const MatmulArgs&, const GroupPair& pr, int64_t b) {
      const uint8_t* lo = pr.lo + b * kSuperBytes;
      const uint8_t* hi = pr.hi + b * kSuperBytes;
      const RowScales16 scales(lo + q45::kScaleOff, hi + q45::kScaleOff);
      for (int t = 0; t < 4; ++t) mins[t] = scales.min_pair(t);
      d = simd512::fp16_pair(lo + q45::kHalfOff, hi + q45::kHalfOff);
      dmin = simd512::fp16_pair(lo + q45::kMinHalfOff, hi + q45::kMinHalfOff);
    }
    void operator()(const MatmulArgs& p, int64_t c, int t0, int t1, int64_t b, const Sums* sums, __m512* acc) const {
      for (int t = t0; t < t1; ++t) {
        const block_q8_K& a = reinterpret_cast<const block_q8_K*>(p.a + (c + t) * p.a_stride)[b];
        const Sums& s = sums[t / kTileTokens];
        const int row = 16 * (t % kTileTokens);
        const __m512i isum = _mm512_add_epi32(_mm512_load_si512(s.lo + row),
                                              _mm512_slli_epi32(_mm512_load_si512(s.hi + row), kScaleShift));
        const __m512 da = _mm512_set1_ps(a.d);
        const __m512 m = simd512::to_f32(mins_dot(mins, a.bsums));
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, da), simd512::to_f32(isum), acc[t]);
        acc[t] = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, da), m, acc[t]);
      }
    }
  };
};

}  // namespace

void tile_q4_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  tile_kernel<Q45KTiles<q45x16::Q4KCodes16, 4>>(p, r0, r1, c0, c1, avx512::tile_q4_k);
}

void tile_q5_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  tile_kernel<Q45KTiles<q45x16::Q5KCodes16, 3>>(p, r0, r1, c0, c1, avx512::tile_q5_k);
}

}  // namespace ember::cpu::amx
