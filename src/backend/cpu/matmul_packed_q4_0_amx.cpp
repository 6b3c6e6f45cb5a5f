// Packed Q4_0 with AMX int8 (see matmul_packed_amx.h).
//
// The groups of matmul_packed_q4_0_avx2.cpp: per 32-element block of 8 rows, 8 fp16 scales,
// then 4 loads of 32 B whose dword r holds 4 code bytes of row r (low nibbles elements
// 4q..4q+3, high nibbles 16+4q..16+4q+3). A block's B tile (8 rows of 64 B, two groups) holds
// the unsigned codes u in the activations' order: rows 0-3 the low nibbles of loads 0-3,
// rows 4-7 the high ones. tdpbsud (signed activations, unsigned codes) gives the block's
// exact int32 dot S = sum u * a of 16 tokens and 16 rows; the f32 steps
//   y_r += d_r * (da * S_r - 8 * s)
// are the AVX-512 kernel's, in its order: bitwise the same outputs.
#include "backend/cpu/avx512_intrinsics.h"
#define EMBER_AMX_KERNEL
#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/matmul_packed_amx.h"
#include "backend/cpu/matmul_packed_avx512.h"

namespace ember::cpu::amx {

namespace {

namespace simd512 = avx512::simd512;

struct Q4_0Tiles {
  static constexpr size_t kBlockBytes = kGroupRows * sizeof(block_q4_0);  // 144 per block and group
  static constexpr size_t kScaleBytes = kGroupRows * 2;
  static constexpr int kBRows = QK4_0 / 4;
  static constexpr size_t kStagedBytes = kBRows * 64;  // one B tile
  static constexpr int kMaxTokenTiles = 1;
  static constexpr int kParts = 1;
  // Tiles: 0 activations (16 tokens x 32 B), 1 weights (8 x 64 B), 2 dots (16 x 16 int32).
  static constexpr TileConfig kConfig = TileConfig{}.tile(0, kTileTokens, QK4_0).tile(1, kBRows, 64).tile(2, kTileTokens, 64);

  static int64_t blocks(int64_t k) { return k / QK4_0; }

  static void stage(const MatmulArgs&, const GroupPair& pr, int64_t b, uint8_t* out) {
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    for (int q = 0; q < 4; ++q) {
      const size_t at = b * kBlockBytes + kScaleBytes + 32 * q;
      const __m512i raw = simd512::load_pair(pr.lo + at, pr.hi + at);
      _mm512_store_si512(out + 64 * q, _mm512_and_si512(raw, nibble));
      _mm512_store_si512(out + 64 * (4 + q), _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble));
    }
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
    tile_dot_su<2, 0, 1>();
  }

  template <int NT>
  static void store(Sums* out) {
    tile_store<2>(out[0].dot, 64);
  }

  struct Finish {
    __m512 d;
    Finish(const MatmulArgs&, const GroupPair& pr, int64_t b)
        : d(simd512::fp16_pair(pr.lo + b * kBlockBytes, pr.hi + b * kBlockBytes)) {}
    void operator()(const MatmulArgs& p, int64_t c, int t0, int t1, int64_t b, const Sums* sums, __m512* acc) const {
      for (int t = t0; t < t1; ++t) {
        const block_q8s& ab = reinterpret_cast<const block_q8s*>(p.a + (c + t) * p.a_stride)[b];
        const __m512 dot = simd512::to_f32(_mm512_load_si512(sums[0].dot + 16 * t));
        const __m512 s = _mm512_fmsub_ps(_mm512_set1_ps(ab.d), dot, _mm512_set1_ps(8.0f * ab.s));
        acc[t] = _mm512_fmadd_ps(d, s, acc[t]);
      }
    }
  };
};

}  // namespace

void tile_q4_0(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  tile_kernel<Q4_0Tiles>(p, r0, r1, c0, c1, avx512::tile_q4_0);
}

}  // namespace ember::cpu::amx
