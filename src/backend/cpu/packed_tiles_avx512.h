// The walk of the packed AVX-512 kernels: the AVX2 kernels' groups of 8 rows taken in pairs,
// 16 rows per 512-bit register (lanes 0-7 group g, lanes 8-15 group g+1; in a decode step,
// a far-apart group: decode_far_pairs). A pair's second
// group may be missing (an odd number of groups in the range): the kernel then reads group g
// twice and keeps the low lanes, so one code path serves both and a group's outputs never
// depend on its partner (each lane's arithmetic is its own row's).
// Included by *_avx512.cpp files only, after avx512_intrinsics.h.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/packed_tiles.h"

namespace ember::cpu::EMBER_AVX512_NS {

constexpr int kGroupRows = 8;  // the AVX2 kernels' group height

// A decode step (fewer tokens than a tile) as the AVX2 kernels walk it: far-apart groups in
// lockstep (for_each_group_pair), one(g, step, c) computing group g in lanes 0-7 and group
// g + step in lanes 8-15, or g alone (step 0) for the odd group left over, so each thread
// reads two streams where neighbouring pairs make one. This is why AVX-512 decode lost to
// AVX2 (issue 32): on the Sapphire Rapids VM, tools/bench-ab tg64, 3 alternated rounds, all
// decode forced to AVX-512, neighbouring pairs -> far pairs (with the K-quants' prefetch per
// part of a super-block, as their AVX2 kernels do): TinyLlama-shaped Q4_K_M 71.2 -> 82.6% of
// the roofline (AVX2 83.2%), Q4_0 77.0 -> 90.5% (AVX2 85.1%), Q8_0 87.5 -> 89.1%.
template <class One>
inline void decode_far_pairs(int64_t r0, int64_t r1, int64_t c0, int64_t c1, One&& one) {
  for_each_group_pair(kGroupRows, r0, r1, c0, c1,
                      [&](const int64_t* gs, int n, int64_t c) { one(gs[0], n == 2 ? gs[1] - gs[0] : 0, c); });
}

// Stores one token's outputs of groups g (lanes 0-7) and g + step (lanes 8-15; step 0: g
// alone, the range's last group), y pointing at the token's row 0; r_end: the matrix's row
// count, so a short last group stores only its rows.
inline void store_group_pair(float* y, __m512 v, int64_t g, int64_t step, int64_t r_end) {
  if (step <= 1) {
    simd512::store_rows(y + g * kGroupRows, v, r_end - g * kGroupRows);
    return;
  }
  alignas(64) float out[16];
  _mm512_store_ps(out, v);
  std::memcpy(y + g * kGroupRows, out, kGroupRows * sizeof(float));  // a far pair's first group is whole
  const int64_t hi_rows = std::min<int64_t>(kGroupRows, r_end - (g + step) * kGroupRows);
  std::memcpy(y + (g + step) * kGroupRows, out + kGroupRows, static_cast<size_t>(hi_rows) * sizeof(float));
}

// tile(g, step, c) computes groups g and g + step (step 1; 0: g alone) for tokens c ..
// c+RN-1, one(g, step, c) the same for one token c (the tokens left over from whole RN-token
// tiles). The groups cover rows [r0, r1); a group without its pair (step 0) is always the
// range's last, so storing min(16, r1 - 8g) rows from its first also leaves out the lanes
// it duplicates (and the padding rows of a short last group). A decode step (fewer tokens
// than a tile) pairs far-apart groups instead (decode_far_pairs).
template <int RN, class Tile, class One>
inline void for_each_group_pair_tile(int64_t r0, int64_t r1, int64_t c0, int64_t c1, Tile&& tile, One&& one) {
  if (c1 - c0 < RN) {
    decode_far_pairs(r0, r1, c0, c1, one);
    return;
  }
  for_each_group_tile<2, RN>(
      kGroupRows, r0, r1, c0, c1, [&](int64_t g, int64_t c) { tile(g, 1, c); },
      [&](int64_t g, int64_t c) { tile(g, 0, c); },
      [&](int64_t g0, int64_t g1, int64_t c) {
        for (int64_t g = g0; g < g1; g += 2) one(g, g + 1 < g1 ? 1 : 0, c);
      });
}

// For a kernel with a wide tile of W tokens and a narrow one of N: per block of tokens, each
// group pair takes W-token tiles, then N-token tiles, then single tokens while its codes are
// in L1, so a batch of any size reads each pair once (for_each_group_pair_tile walks all
// pairs again for each token left over). Fewer tokens than N walk as decode does there.
template <int W, int N, class Wide, class Narrow, class One>
inline void for_each_group_pair_tiles(int64_t r0, int64_t r1, int64_t c0, int64_t c1, Wide&& wide, Narrow&& narrow,
                                      One&& one) {
  if (c1 - c0 < N) {
    decode_far_pairs(r0, r1, c0, c1, one);
    return;
  }
  const int64_t g0 = r0 / kGroupRows, g1 = (r1 + kGroupRows - 1) / kGroupRows;
  for (int64_t cb = c0; cb < c1; cb += kTokenBlock) {
    const int64_t ce = cb + kTokenBlock < c1 ? cb + kTokenBlock : c1;
    for (int64_t g = g0; g < g1; g += 2) {
      const int64_t step = g + 1 < g1 ? 1 : 0;
      int64_t c = cb;
      for (; c + W <= ce; c += W) wide(g, step, c);
      for (; c + N <= ce; c += N) narrow(g, step, c);
      for (; c < ce; ++c) one(g, step, c);
    }
  }
}

}  // namespace ember::cpu::EMBER_AVX512_NS
