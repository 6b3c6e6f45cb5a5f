// Packed Q4_K with AMX int8 (see matmul_packed_amx.h): the groups of
// matmul_packed_q4_k_avx2.cpp (per super-block a 128-byte head of fp16 d, dmin and the packed
// 6-bit scales, then load 8j+q of the codes: dword r holds 4 bytes of row r, low nibbles
// sub-block 2j, high nibbles 2j+1).
//
// The AVX-512 kernel sums a super-block as isum = sum_g sc_g * S_g, one int32 dot S_g per
// sub-block of 32. Storing 8 dot tiles per super-block would cost more than it saves, so the
// 6-bit scale goes into the weights instead: sc = 16 * hi + lo with lo <= 15 and hi <= 3, and
// the staged B tiles hold the bytes u * lo (<= 225, unsigned) and u * hi (<= 45). Two tile
// sums over the whole super-block (tdpbsud: signed activations, unsigned weights) give
//   C_lo = sum_g lo_g * S_g,  C_hi = sum_g hi_g * S_g,  isum = C_lo + 16 * C_hi
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
using avx512::q45x16::mins_dot;
using avx512::q45x16::RowScales16;

// A sub-block's scale part (lo or hi) of each row as the int16 pair of its dword, for mullo:
// every product u * part fits its byte, so the 16-bit products carry nothing across bytes.
inline __m512i scale_words(__m512i part) { return _mm512_or_si512(part, _mm512_slli_epi32(part, 16)); }

struct Q4KTiles {
  static constexpr size_t kCodeBytes = 32 * 32;  // per super-block and group
  static constexpr size_t kSuperBytes = q45::kHeadBytes + kCodeBytes;
  static_assert(kSuperBytes == kGroupRows * sizeof(block_q4_K), "the AVX2 kernel's groups");
  static constexpr size_t kTileBytes = 16 * 64;             // one B tile: 16 x 64 B
  static constexpr size_t kStagedBytes = 8 * kTileBytes;    // per super-block: (lo, hi) x 4 pairs
  static constexpr int kScaleShift = 4;                     // sc = hi << 4 | lo
  static constexpr int kMaxTokenTiles = 2;
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
    const __m512i nibble = _mm512_set1_epi8(0x0F), low4 = _mm512_set1_epi32(0x0F);
    for (int sp = 0; sp < 4; ++sp) {
      const __m512i sc0 = scales.scale(2 * sp), sc1 = scales.scale(2 * sp + 1);
      const __m512i lo0 = scale_words(_mm512_and_si512(sc0, low4)), lo1 = scale_words(_mm512_and_si512(sc1, low4));
      const __m512i hi0 = scale_words(_mm512_srli_epi32(sc0, kScaleShift));
      const __m512i hi1 = scale_words(_mm512_srli_epi32(sc1, kScaleShift));
      uint8_t* tile_lo = out + (2 * sp) * kTileBytes;
      uint8_t* tile_hi = tile_lo + kTileBytes;
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) {
        const size_t at = q45::kHeadBytes + 256 * sp + 32 * q;
        const __m512i raw = simd512::load_pair(lo + at, hi + at);
        const __m512i u0 = _mm512_and_si512(raw, nibble);
        const __m512i u1 = _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble);
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
  static void start(const MatmulArgs& p, const uint8_t* staged, int64_t c, int64_t b) {
    const uint8_t* act = p.a + c * p.a_stride + b * sizeof(block_q8_K) + offsetof(block_q8_K, qs);
    const uint8_t* act1 = act + kTileTokens * p.a_stride;
    const uint8_t* tiles = staged + b * kStagedBytes;
    tile_zero<4>();
    tile_zero<5>();
    if constexpr (NT == 2) {
      tile_zero<6>();
      tile_zero<7>();
    }
    for (int sp = 0; sp < 4; ++sp) {
      tile_load<0>(act + 64 * sp, p.a_stride);
      tile_load<2>(tiles + (2 * sp) * kTileBytes, 64);
      tile_load<3>(tiles + (2 * sp + 1) * kTileBytes, 64);
      tile_dot_su<4, 0, 2>();
      tile_dot_su<5, 0, 3>();
      if constexpr (NT == 2) {
        tile_load<1>(act1 + 64 * sp, p.a_stride);
        tile_dot_su<6, 1, 2>();
        tile_dot_su<7, 1, 3>();
      }
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

  static void finish(const MatmulArgs& p, const GroupPair& pr, int64_t c, int n, int64_t b, const Sums* sums,
                     __m512* acc) {
    const uint8_t* lo = pr.lo + b * kSuperBytes;
    const uint8_t* hi = pr.hi + b * kSuperBytes;
    const RowScales16 scales(lo + q45::kScaleOff, hi + q45::kScaleOff);
    const __m512i mins[4] = {scales.min_pair(0), scales.min_pair(1), scales.min_pair(2), scales.min_pair(3)};
    const __m512 d = simd512::fp16_pair(lo + q45::kHalfOff, hi + q45::kHalfOff);
    const __m512 dmin = simd512::fp16_pair(lo + q45::kMinHalfOff, hi + q45::kMinHalfOff);
    for (int t = 0; t < n; ++t) {
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

}  // namespace

void tile_q4_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  tile_kernel<Q4KTiles>(p, r0, r1, c0, c1, avx512::tile_q4_k);
}

}  // namespace ember::cpu::amx
