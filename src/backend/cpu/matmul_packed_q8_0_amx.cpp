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

struct Q8_0Tiles {
  static constexpr size_t kScaleBytes = kGroupRows * 2;     // per block and group
  static constexpr size_t kCodeBytes = kGroupRows * QK8_0;  // per block and group: 8 loads of 32 B
  static constexpr int kBRows = QK8_0 / 4;
  static constexpr size_t kStagedBytes = kBRows * 64;       // one B tile
  static constexpr int kMaxTokenTiles = 1;
  static constexpr int kParts = 1;
  // Tiles: 0 activations (16 tokens x 32 B), 1 weights (8 x 64 B), 2 dots (16 x 16 int32).
  static constexpr TileConfig kConfig = TileConfig{}.tile(0, kTileTokens, QK8_0).tile(1, kBRows, 64).tile(2, kTileTokens, 64);

  static int64_t blocks(int64_t k) { return k / QK8_0; }

  static void stage(const MatmulArgs& p, const GroupPair& pr, int64_t b, uint8_t* out) {
    const size_t at = blocks(p.k) * kScaleBytes + b * kCodeBytes;
    for (int q = 0; q < kBRows; ++q) _mm512_store_si512(out + 64 * q, simd512::load_pair(pr.lo + at + 32 * q, pr.hi + at + 32 * q));
  }

  struct Sums {
    alignas(64) int32_t dot[kTileTokens * 16];
  };

  template <int NT>
  static void start(const MatmulArgs& p, const uint8_t* staged, int64_t c, int64_t b, int) {
    static_assert(NT == 1);
    tile_load<0>(p.a + c * p.a_stride + b * sizeof(block_q8s) + offsetof(block_q8s, qs), p.a_stride);
    tile_load<1>(staged + b * kStagedBytes, 64);
    tile_zero<2>();
    tile_dot_ss<2, 0, 1>();
  }

  template <int NT>
  static void store(Sums* out) {
    tile_store<2>(out[0].dot, 64);
  }

  struct Finish {
    __m512 d;
    Finish(const MatmulArgs&, const GroupPair& pr, int64_t b)
        : d(simd512::fp16_pair(pr.lo + b * kScaleBytes, pr.hi + b * kScaleBytes)) {}
    void operator()(const MatmulArgs& p, int64_t c, int t0, int t1, int64_t b, const Sums* sums, __m512* acc) const {
      for (int t = t0; t < t1; ++t) {
        const float da = reinterpret_cast<const block_q8s*>(p.a + (c + t) * p.a_stride)[b].d;
        const __m512 s = simd512::to_f32(_mm512_load_si512(sums[0].dot + 16 * t));
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(da)), s, acc[t]);
      }
    }
  };
};

}  // namespace

void tile_q8_0(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  tile_kernel<Q8_0Tiles>(p, r0, r1, c0, c1, avx512::tile_q8_0);
}

}  // namespace ember::cpu::amx
