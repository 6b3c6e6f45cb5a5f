// F16 weights repacked in groups of 8 rows (built with AVX2 flags; see PackedKernel).
//
// Layout of a group: element-major, 16 bytes per element e = 0..k-1 holding the 8 rows'
// fp16 values of that element (exactly the rows' own size; any k works).
//
// The row-layout kernel dots along k, so each of its 3-row x 4-token tiles reads 176 bytes
// of weights and activations per 12 FMAs and, at long k (14336), streams its rows and
// activations from L2/L3 (~29 bytes a cycle at full FMA rate). Here a tile is an outer
// product instead: one cvtph gives element e of all 8 rows as 8 f32 lanes, which meets
// each token's activation e broadcast in one FMA, so a token's accumulator holds its 8
// outputs: a tile of 2 groups x 4 tokens reads 32 + 16 bytes per 8 FMAs, and needs no
// horizontal sums.
// Each output is one f32 sum over e in order, whatever the tile: one token alone gives
// bitwise what it gives inside a batch. (One running sum rounds a little more than the row
// kernel's 8 lane sums: ~3x its RMS error, ~1e-6 relative at k = 4096 against a double
// reference, far below the fp16 weights' own 5e-4.)
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/matmul_packed_avx2.h"
#include "backend/cpu/packed_tiles.h"

namespace ember::cpu {

namespace {

constexpr int kRows = 8;
constexpr size_t kElementBytes = kRows * 2;

size_t group_bytes(int64_t k) { return static_cast<size_t>(k) * kElementBytes; }

void pack_group(const uint8_t* w, size_t w_stride, int n_rows, int64_t k, uint8_t* dst) {
  std::memset(dst, 0, group_bytes(k));  // missing rows: +0.0
  for (int r = 0; r < n_rows; ++r) {
    const uint8_t* row = w + r * w_stride;
    for (int64_t e = 0; e < k; ++e) std::memcpy(dst + e * kElementBytes + 2 * r, row + 2 * e, 2);
  }
}

// Outputs of G consecutive groups from g for tokens c .. c+RN-1 (the last group of the
// matrix may hold fewer than 8 rows: r_end is the matrix's row count).
// noinline: inlined into tile() next to the 8-group variant it ran ~10% slower (measured).
template <int G, int RN>
[[gnu::noinline]] void micro(const MatmulArgs& p, int64_t g, int64_t r_end, int64_t c) {
  const uint8_t* w[G];
  const float* a[RN];
  for (int i = 0; i < G; ++i) w[i] = p.w + (g + i) * p.w_stride;
  for (int j = 0; j < RN; ++j) a[j] = reinterpret_cast<const float*>(p.a + (c + j) * p.a_stride);
  __m256 acc[G][RN];
  for (int i = 0; i < G; ++i)
    for (int j = 0; j < RN; ++j) acc[i][j] = _mm256_setzero_ps();
#pragma GCC unroll 2  // 2, 4 and 8 measured alike
  for (int64_t e = 0; e < p.k; ++e) {
    __m256 wv[G];
    for (int i = 0; i < G; ++i)
      wv[i] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i] + e * kElementBytes)));
    for (int j = 0; j < RN; ++j) {
      const __m256 av = _mm256_broadcast_ss(a[j] + e);
      for (int i = 0; i < G; ++i) acc[i][j] = _mm256_fmadd_ps(wv[i], av, acc[i][j]);
    }
  }
  // Fully unrolled so that acc stays in registers (a loop over it here made GCC keep acc
  // in memory and store it on every element).
#pragma GCC unroll 16
  for (int i = 0; i < G; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < RN; ++j)
      store_group_rows(p.y + (c + j) * p.y_stride + (g + i) * kRows, acc[i][j], r_end - (g + i) * kRows);
}

// Prefill tiles: 2 groups x 4 tokens, 8 accumulators (enough to keep both FMA pipes busy
// through the FMA latency). Measured against 1x8, 1x12, 2x6, 3x4 (spills) and 4x2.
constexpr int kTileGroups = 2, kTileTokens = 4;
// Tokens left over (decode): 8 groups per pass, 8 independent FMA chains (in-cache matvec
// ~65 GB/s per core against ~50 with 4 and ~25 with 2).
constexpr int kOneTokenGroups = 8;

void tile(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  for_each_group_tile<kTileGroups, kTileTokens>(
      kRows, r0, r1, c0, c1, [&](int64_t g, int64_t c) { micro<kTileGroups, kTileTokens>(p, g, r1, c); },
      [&](int64_t g, int64_t c) { micro<1, kTileTokens>(p, g, r1, c); },
      [&](int64_t g0, int64_t g1, int64_t c) {
        int64_t g = g0;
        for (; g + kOneTokenGroups <= g1; g += kOneTokenGroups) micro<kOneTokenGroups, 1>(p, g, r1, c);
        for (; g < g1; ++g) micro<1, 1>(p, g, r1, c);
      });
}

}  // namespace

const PackedKernel kPackedF16x8Avx2{kRows, group_bytes, pack_group, ActFormat::F32, tile};

}  // namespace ember::cpu
