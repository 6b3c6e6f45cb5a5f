// Q8_0 weights repacked in groups of 8 rows (built with AVX2 flags; see PackedKernel).
//
// Layout of a group of k elements (nb = k / 32 blocks; 8 * 34 bytes per block, exactly the
// 8 rows' original size):
//   nb x 8 fp16   the scales d of block b of rows 0..7, block after block
//   nb x 256 B    the codes: load q (32 B, q = 0..7) of block b holds, for row r = 0..7,
//                 the row's int8 codes of elements 4q..4q+3.
// The scales come first so that the 32-byte code loads are aligned whenever k is a multiple
// of 64 (the packed matrix starts 64-byte aligned; the group size and nb * 16 are then
// multiples of 32), as in every model.
//
// One load gives the same four elements of all 8 rows, dotted with those four activations
// broadcast. Both operands are signed, and maddubs needs one unsigned: it gets |w| (shared
// by the tokens of a tile) and the activations with w's signs (one sign op per token).
// A pair sum reaches 2 * 128 * 127 = 32512 (w = -128 gives |w| = 128 as unsigned), so two
// maddubs results cannot be added in int16: each is widened by madd to one int32 per row
// first. The 8 loads of a block then hold each row's exact integer dot S_r in one lane, and
// the 8 rows finish together in f32 lanes with no horizontal sum:
//   y_r += (d_r * da) * S_r.
// A token's outputs go through the same f32 operations whatever the tile width, so one
// token alone gives bitwise what it gives inside a batch.
// Prefill is bound by the multiply pipes: on Zen 3 vpsignb shares the two that run maddubs
// and madd (12 of any mix of the three take 6 cycles, against 3 with vpaddd or vpxor), and
// the 2 x 4 tile's 26 such ops per code load take the 13 cycles it measures. Applying the
// sign with vpxor instead (maddubs(|w|, a ^ (w < 0)), plus each row's sum of |w| over w < 0
// added back per block) measured 7% faster without that correction and 8% slower with it
// (ember bench-ops Q8_0 matmul, alternated), so the sign op stays.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_packed_avx2.h"
#include "backend/cpu/packed_tiles.h"

namespace ember::cpu {

namespace {

constexpr int kRows = 8;
constexpr size_t kScaleBytes = kRows * 2;     // per block
constexpr size_t kCodeBytes = kRows * QK8_0;  // per block: 8 loads of 32 B
constexpr int kLoads = QK8_0 / 4;             // 4 elements of 8 rows per load

int64_t blocks(int64_t k) { return k / QK8_0; }

size_t group_bytes(int64_t k) { return static_cast<size_t>(blocks(k)) * (kScaleBytes + kCodeBytes); }

void pack_group(const uint8_t* w, size_t w_stride, int n_rows, int64_t k, uint8_t* dst) {
  std::memset(dst, 0, group_bytes(k));  // missing rows: scale 0, codes 0
  const int64_t nb = blocks(k);
  uint8_t* codes = dst + nb * kScaleBytes;
  for (int64_t b = 0; b < nb; ++b) {
    for (int r = 0; r < n_rows; ++r) {
      const block_q8_0& blk = reinterpret_cast<const block_q8_0*>(w + r * w_stride)[b];
      std::memcpy(dst + b * kScaleBytes + 2 * r, &blk.d, 2);
      for (int q = 0; q < kLoads; ++q) std::memcpy(codes + b * kCodeBytes + 32 * q + 4 * r, blk.qs + 4 * q, 4);
    }
  }
}

inline int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Groups g, g + step, .. g + (G-1) step for tokens c .. c+RN-1 (r_end: the matrix's row
// count): neighbours (step 1) in prefill tiles, far apart for decode (for_each_group_pair).
// noinline: GCC inlined the 2 x 4 tile into tile() once the decode pair was added, and the
// prefill matmul ran ~4% slower (ember bench-ops, Q8_0 512 x 4096 x 4096).
template <int G, int RN, size_t kDistance = kPrefetchDistance>
[[gnu::noinline]] void micro(const MatmulArgs& p, int64_t g, int64_t step, int64_t r_end, int64_t c) {
  const int64_t nb = blocks(p.k);
  const uint8_t* scales[G];
  const uint8_t* codes[G];
  for (int i = 0; i < G; ++i) {
    scales[i] = p.w + (g + i * step) * p.w_stride;
    codes[i] = scales[i] + nb * kScaleBytes;
  }
  const block_q8s* a[RN];
  for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const block_q8s*>(p.a + (c + j) * p.a_stride);
  __m256 acc[G][RN];
  for (int i = 0; i < G; ++i)
    for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    // Two streams per group, the scales and the codes; none for four groups (the
    // avx2-4streams walk, for_each_group_quad: the hardware prefetchers do better alone).
    if constexpr (RN == 1 && G < 4) {
      for (int i = 0; i < G; ++i) {
        prefetch_ahead(scales[i] + b * kScaleBytes, kScaleBytes, kDistance);
        prefetch_ahead(codes[i] + b * kCodeBytes, kCodeBytes, kDistance);
      }
    }
    __m256i dot[G][RN];
    for (int i = 0; i < G; ++i)
      for (int j = 0; j < RN; ++j) dot[i][j] = _mm256_setzero_si256();
    for (int q = 0; q < kLoads; ++q) {
      __m256i w[G], uw[G];
      for (int i = 0; i < G; ++i) {
        w[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes[i] + b * kCodeBytes + 32 * q));
        uw[i] = _mm256_sign_epi8(w[i], w[i]);
      }
      for (int j = 0; j < RN; ++j) {
        const __m256i av = _mm256_set1_epi32(load_i32(a[j][b].qs + 4 * q));
        for (int i = 0; i < G; ++i) {
          const __m256i pairs = _mm256_maddubs_epi16(uw[i], _mm256_sign_epi8(av, w[i]));
          dot[i][j] = running_add_epi32(dot[i][j], _mm256_madd_epi16(pairs, ones));
        }
      }
    }
    for (int i = 0; i < G; ++i) {
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales[i] + b * kScaleBytes)));
      for (int j = 0; j < RN; ++j)
        acc[i][j] =
            _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(a[j][b].d)), _mm256_cvtepi32_ps(dot[i][j]), acc[i][j]);
    }
  }
  for (int i = 0; i < G; ++i) {
    const int64_t row0 = (g + i * step) * kRows;
    for (int j = 0; j < RN; ++j) store_group_rows(p.y + (c + j) * p.y_stride + row0, acc[i][j], r_end - row0);
  }
}

void tile(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  // 2 groups x 4 tokens: each activation broadcast serves 16 rows. Measured ~6% faster
  // than 1 x 4 (1 x 6 and 1 x 8 like 1 x 4; 1 x 2, 1 x 3, 2 x 2 and 2 x 3 no better).
  packed_group_walk<2, 4>(kRows, r0, r1, c0, c1, [&]<int G, int RN>(int64_t g, int64_t step, int64_t c) {
    micro<G, RN>(p, g, step, r1, c);
  });
}

// The avx2-4streams variant (kernel_choice.h): decode reads four far-apart groups at once
// (for_each_group_quad); tiles of 4 tokens or more are tile()'s.
void tile_four_streams(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (c1 - c0 >= 4) return tile(p, r0, r1, c0, c1);
  for_each_group_quad(kRows, r0, r1, c0, c1, [&](const int64_t* gs, int n, int64_t c) {
    const int64_t step = n > 1 ? gs[1] - gs[0] : 1;  // the quarter's or the half's length
    if (n == 4) micro<4, 1>(p, gs[0], step, r1, c);
    else if (n == 2) micro<2, 1>(p, gs[0], step, r1, c);
    else micro<1, 1>(p, gs[0], step, r1, c);
  });
}

// The avx2-prefetch1k variant (kernel_choice.h): decode's pairs prefetch kNearPrefetchDistance
// ahead; tiles of 4 tokens or more are tile()'s.
void tile_near_prefetch(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  if (c1 - c0 >= 4) return tile(p, r0, r1, c0, c1);
  packed_group_decode_walk(kRows, r0, r1, c0, c1, [&]<int G, int RN>(int64_t g, int64_t step, int64_t c) {
    micro<G, RN, kNearPrefetchDistance>(p, g, step, r1, c);
  });
}

}  // namespace

const PackedKernel kPackedQ8_0x8Avx2{kRows, group_bytes, pack_group, ActFormat::Q8S, tile};
const PackedKernel kPackedQ8_0x8Avx2FourStreams{kRows, group_bytes, pack_group, ActFormat::Q8S, tile_four_streams};
const PackedKernel kPackedQ8_0x8Avx2NearPrefetch{kRows, group_bytes, pack_group, ActFormat::Q8S, tile_near_prefetch};

}  // namespace ember::cpu
