// Packed Q6_K with AMX int8 (see matmul_packed_amx.h): the groups of
// matmul_packed_q6_k_avx2.cpp (per super-block 16 sub-blocks of 16 elements, 6-bit codes u,
// an int8 scale sc_g per sub-block, an fp16 d per super-block; packed_q6_k_avx512.h).
//
// The AVX-512 kernel sums a super-block as the exact integer
//   S = sum_g sc_g * sum_{i in g} (u_i - 32) * a_i.
// Here the weights (u - 32) * sc go into the tiles, split by the base-4 digits of the scale,
// sc = e0 + 4 e1 + 16 e2 + 64 e3 with e0..e2 in [0, 3] and e3 = sc >> 6 in [-2, 1], so that
// every staged byte (u - 32) * e is in [-96, 93]. Four tile sums over the whole super-block
// (tdpbssd, both signed), C_i = sum (u - 32) * e_i * a, give S = C0 + 4 C1 + 16 C2 + 64 C3
// exactly (|C_i| <= 256 * 96 * 128 < 2^22), without the bias term; the f32 step
//   y_r += (d_r * da) * S_r
// is the AVX-512 kernel's: bitwise the same outputs.
#include "backend/cpu/avx512_intrinsics.h"
#define EMBER_AMX_KERNEL
#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/matmul_packed_amx.h"
#include "backend/cpu/matmul_packed_avx512.h"
#include "backend/cpu/packed_q6_k_avx512.h"

namespace ember::cpu::amx {

namespace {

namespace simd512 = avx512::simd512;
namespace q6 = avx512::q6x16;

// One base-4 digit e of a sub-block's scale, per row (dword), ready to turn codes u (bytes
// in [0, 63]) into the bytes (u - 32) * e: u * |e| <= 189 by a 16-bit multiply that carries
// nothing across bytes, negated where e < 0, minus 32 e, all modulo 256.
struct Digit {
  __m512i abs_words;  // |e| in both int16 of the dword
  __mmask64 negative; // the row's bytes, where e < 0
  __m512i bias;       // 32 e in every byte of the dword
  explicit Digit(__m512i e) {
    const __m512i a = _mm512_abs_epi32(e);
    abs_words = _mm512_or_si512(a, _mm512_slli_epi32(a, 16));
    negative = _mm512_movepi8_mask(_mm512_srai_epi32(e, 31));
    bias = _mm512_mullo_epi32(_mm512_and_si512(_mm512_slli_epi32(e, 5), _mm512_set1_epi32(0xFF)),
                              _mm512_set1_epi32(0x01010101));
  }
  __m512i times(__m512i u) const {
    const __m512i prod = _mm512_mullo_epi16(u, abs_words);
    return _mm512_sub_epi8(_mm512_mask_sub_epi8(prod, negative, _mm512_setzero_si512(), prod), bias);
  }
};

struct Q6KTiles {
  static constexpr size_t kTileBytes = 16 * 64;                 // one B tile: 16 x 64 B
  static constexpr size_t kStagedBytes = 4 * 4 * kTileBytes;   // per super-block: 4 chunks x 4 digits
  static constexpr int kMaxTokenTiles = 1;
  static constexpr int kParts = 4;  // a chunk of 64 elements each
  // Tiles: 0 the activations of 16 tokens (16 x 64 B: a chunk of 4 sub-blocks); 1-3 weight
  // tiles in turn (16 x 64 B); 4-7 the digit sums C0..C3.
  static constexpr TileConfig kConfig = TileConfig{}
                                            .tile(0, kTileTokens, 64)
                                            .tile(1, 16, 64)
                                            .tile(2, 16, 64)
                                            .tile(3, 16, 64)
                                            .tile(4, kTileTokens, 64)
                                            .tile(5, kTileTokens, 64)
                                            .tile(6, kTileTokens, 64)
                                            .tile(7, kTileTokens, 64);

  static int64_t blocks(int64_t k) { return k / QK_K; }

  // Super-block b's B tiles: tile 4 ch + i holds the 64 elements of chunk ch (sub-blocks
  // 4 ch .. 4 ch + 3; tile row 4 (g % 4) + j = elements 4j .. 4j+3 of sub-block g) times digit i.
  static void stage(const MatmulArgs&, const GroupPair& pr, int64_t b, uint8_t* out) {
    const uint8_t* lo = pr.lo + b * q6::kSuperBytes;
    const uint8_t* hi = pr.hi + b * q6::kSuperBytes;
    for (int g = 0; g < q6::kSubBlocks; ++g) {
      const __m512i pairs = q6::scale_pairs(lo, hi, g / 2);
      const __m512i sc = g % 2 == 0 ? _mm512_srai_epi32(_mm512_slli_epi32(pairs, 16), 16) : _mm512_srai_epi32(pairs, 16);
      const __m512i three = _mm512_set1_epi32(3);
      const Digit digits[4] = {Digit(_mm512_and_si512(sc, three)), Digit(_mm512_and_si512(_mm512_srai_epi32(sc, 2), three)),
                               Digit(_mm512_and_si512(_mm512_srai_epi32(sc, 4), three)), Digit(_mm512_srai_epi32(sc, 6))};
      const q6::SubCodes16 u(lo + g * q6::kSubBytes, hi + g * q6::kSubBytes);
      uint8_t* chunk = out + (g / 4) * 4 * kTileBytes + (g % 4) * 4 * 64;
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) _mm512_store_si512(chunk + i * kTileBytes + 64 * j, digits[i].times(u.q[j]));
    }
  }

  // One token tile's digit sums C0..C3 of a super-block: 16 x 16 int32 each.
  struct Sums {
    alignas(64) int32_t c[4][kTileTokens * 16];
  };

  template <int NT>
  static void start(const MatmulArgs& p, const uint8_t* staged, int64_t c, int64_t b, int ch) {
    static_assert(NT == 1);
    const uint8_t* act = p.a + c * p.a_stride + b * sizeof(block_q8_K) + offsetof(block_q8_K, qs) + 64 * ch;
    const uint8_t* chunk = staged + b * kStagedBytes + ch * 4 * kTileBytes;
    if (ch == 0) {
      tile_zero<4>();
      tile_zero<5>();
      tile_zero<6>();
      tile_zero<7>();
    }
    tile_load<0>(act, p.a_stride);
    tile_load<1>(chunk, 64);
    tile_dot_ss<4, 0, 1>();
    tile_load<2>(chunk + kTileBytes, 64);
    tile_dot_ss<5, 0, 2>();
    tile_load<3>(chunk + 2 * kTileBytes, 64);
    tile_dot_ss<6, 0, 3>();
    tile_load<1>(chunk + 3 * kTileBytes, 64);
    tile_dot_ss<7, 0, 1>();
  }

  template <int NT>
  static void store(Sums* out) {
    tile_store<4>(out[0].c[0], 64);
    tile_store<5>(out[0].c[1], 64);
    tile_store<6>(out[0].c[2], 64);
    tile_store<7>(out[0].c[3], 64);
  }

  struct Finish {
    __m512 d;
    Finish(const MatmulArgs&, const GroupPair& pr, int64_t b)
        : d(simd512::fp16_pair(pr.lo + b * q6::kSuperBytes + q6::kDAt, pr.hi + b * q6::kSuperBytes + q6::kDAt)) {}
    void operator()(const MatmulArgs& p, int64_t c, int t0, int t1, int64_t b, const Sums* sums, __m512* acc) const {
      const Sums& s = sums[0];
      for (int t = t0; t < t1; ++t) {
        const float da = reinterpret_cast<const block_q8_K*>(p.a + (c + t) * p.a_stride)[b].d;
        __m512i isum = _mm512_load_si512(s.c[3] + 16 * t);
        for (int i = 2; i >= 0; --i) isum = _mm512_add_epi32(_mm512_slli_epi32(isum, 2), _mm512_load_si512(s.c[i] + 16 * t));
        acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(da)), simd512::to_f32(isum), acc[t]);
      }
    }
  };
};

}  // namespace

void tile_q6_k(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  tile_kernel<Q6KTiles>(p, r0, r1, c0, c1, avx512::tile_q6_k);
}

}  // namespace ember::cpu::amx
