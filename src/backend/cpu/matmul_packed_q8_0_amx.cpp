// Packed Q8_0 with AMX int8 (see matmul_packed_amx.h).
//
// The groups of matmul_packed_q8_0_avx2.cpp: nb = k / 32 blocks, first nb x 8 fp16 scales,
// then per block 8 loads of 32 B whose dword r holds 4 codes of row r. Row q of a block's B
// tile (8 rows of 64 B) is load q of group g then of group g+1, staged once per pair and
// block of tokens. A is the block's 32 codes of 16 tokens, read in place from the block_q8s
// rows. tdpbssd (both signed) gives the block's exact int32 dot S[t][r] of the 16 tokens and
// 16 rows, stored to a buffer; each token's row of it is then one 512-bit vector, one row per
// lane, finished as the AVX-512 kernel does:
//   y_r += (d_r * da) * S_r
// so the outputs are bitwise those of the AVX2 and AVX-512 kernels.
#include "backend/cpu/avx512_intrinsics.h"
#define EMBER_AMX_KERNEL
#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/matmul_packed_amx.h"
#include "backend/cpu/matmul_packed_avx512.h"

namespace ember::cpu::amx {

namespace {

namespace simd512 = avx512::simd512;

constexpr size_t kScaleBytes = kGroupRows * 2;     // per block and group
constexpr size_t kCodeBytes = kGroupRows * QK8_0;  // per block and group: 8 loads of 32 B
constexpr size_t kStagedBytes = 2 * kCodeBytes;    // per block: one B tile of 8 x 64 B
constexpr int kBRows = QK8_0 / 4;

// Tiles: 0, 3 activations (16 tokens x 32 B); 1, 4 weights (8 x 64 B); 2, 5 dots (16 x 16
// int32). Two sets, so one block's multiply runs while the previous block's dots are read.
constexpr TileConfig kConfig = TileConfig{}
                                   .tile(0, kTileTokens, QK8_0)
                                   .tile(1, kBRows, 64)
                                   .tile(2, kTileTokens, 64)
                                   .tile(3, kTileTokens, QK8_0)
                                   .tile(4, kBRows, 64)
                                   .tile(5, kTileTokens, 64);

struct Pair {
  const uint8_t* lo_scales;
  const uint8_t* hi_scales;
  Pair(const MatmulArgs& p, int64_t g, bool pair)
      : lo_scales(p.w + g * p.w_stride), hi_scales(pair ? lo_scales + p.w_stride : lo_scales) {}
};

// B tiles of all blocks of groups g and (when pair) g+1, block after block.
void stage(const MatmulArgs& p, int64_t g, bool pair, uint8_t* staged) {
  const int64_t nb = p.k / QK8_0;
  const Pair pr(p, g, pair);
  const uint8_t* lo_codes = pr.lo_scales + nb * kScaleBytes;
  const uint8_t* hi_codes = pr.hi_scales + nb * kScaleBytes;
  for (int64_t b = 0; b < nb; ++b)
    for (int q = 0; q < kBRows; ++q)
      _mm512_store_si512(staged + b * kStagedBytes + 64 * q,
                         simd512::load_pair(lo_codes + b * kCodeBytes + 32 * q, hi_codes + b * kCodeBytes + 32 * q));
}

// Block b's dots of tokens c .. c+15 into tile C (A and B its companions), stored to `dots`.
template <int A, int B, int C>
inline void block_dots(const MatmulArgs& p, const uint8_t* staged, int64_t c, int64_t b, int32_t* dots) {
  tile_load<A>(p.a + c * p.a_stride + b * sizeof(block_q8s) + offsetof(block_q8s, qs), p.a_stride);
  tile_load<B>(staged + b * kStagedBytes, 64);
  tile_zero<C>();
  tile_dot_ss<C, A, B>();
  tile_store<C>(dots, 64);
}

// acc[t] += (d * da_t) * dots[t], the AVX-512 kernel's f32 step for block b.
inline void finish_block(const MatmulArgs& p, const Pair& pr, int64_t c, int64_t b, const int32_t* dots, __m512* acc) {
  const __m512 d = simd512::fp16_pair(pr.lo_scales + b * kScaleBytes, pr.hi_scales + b * kScaleBytes);
#pragma GCC unroll 16
  for (int t = 0; t < kTileTokens; ++t) {
    const float da = reinterpret_cast<const block_q8s*>(p.a + (c + t) * p.a_stride)[b].d;
    const __m512 s = simd512::to_f32(_mm512_load_si512(dots + 16 * t));
    acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(da)), s, acc[t]);
  }
}

// Groups g and (when pair) g+1 for tokens c .. c+15; r_end: the range's last row + 1.
void tile16(const MatmulArgs& p, const uint8_t* staged, int64_t g, bool pair, int64_t r_end, int64_t c) {
  const int64_t nb = p.k / QK8_0;
  const Pair pr(p, g, pair);
  alignas(64) int32_t dots[2][kTileTokens * 16];
  __m512 acc[kTileTokens];
  for (__m512& v : acc) v = _mm512_setzero_ps();
  block_dots<0, 1, 2>(p, staged, c, 0, dots[0]);
  for (int64_t b = 0; b < nb; b += 2) {
    if (b + 1 < nb) block_dots<3, 4, 5>(p, staged, c, b + 1, dots[1]);
    finish_block(p, pr, c, b, dots[0], acc);
    if (b + 1 >= nb) break;
    if (b + 2 < nb) block_dots<0, 1, 2>(p, staged, c, b + 2, dots[0]);
    finish_block(p, pr, c, b + 1, dots[1], acc);
  }
  const int64_t rows = r_end - g * kGroupRows;
  for (int t = 0; t < kTileTokens; ++t) simd512::store_rows(p.y + (c + t) * p.y_stride + g * kGroupRows, acc[t], rows);
}

}  // namespace

void tile_q8_0(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const TileScope tiles(kConfig);
  uint8_t* staged = staging_buffer(static_cast<size_t>(p.k / QK8_0) * kStagedBytes);
  for_each_pair_tile16(
      p, r0, r1, c0, c1, avx512::tile_q8_0, [&](int64_t g, bool pair) { stage(p, g, pair, staged); },
      [&](int64_t g, bool pair, int64_t c, int n_tiles) {
        for (int i = 0; i < n_tiles; ++i) tile16(p, staged, g, pair, r1, c + i * kTileTokens);
      });
}

}  // namespace ember::cpu::amx
