// The walk of the packed AVX-512 kernels: the AVX2 kernels' groups of 8 rows taken in pairs,
// 16 rows per 512-bit register (lanes 0-7 group g, lanes 8-15 group g+1). A pair's second
// group may be missing (an odd number of groups in the range): the kernel then reads group g
// twice and keeps the low lanes, so one code path serves both and a group's outputs never
// depend on its partner (each lane's arithmetic is its own row's).
// Included by *_avx512.cpp files only, after avx512_intrinsics.h.
#pragma once
#include <cstdint>

#include "backend/cpu/packed_tiles.h"

namespace ember::cpu::EMBER_AVX512_NS {

constexpr int kGroupRows = 8;  // the AVX2 kernels' group height

// tile(g, pair, c) computes groups g and (when pair) g+1 for tokens c .. c+RN-1, one(g, pair,
// c) the same for one token c (the tokens left over from whole RN-token tiles: all of them
// in a decode step). The groups cover rows [r0, r1); a kernel stores min(16, r1 - 8g) rows
// from group g's first: a group without its pair is always the range's last, so that also
// leaves out the lanes it duplicates (and the padding rows of a short last group).
template <int RN, class Tile, class One>
inline void for_each_group_pair_tile(int64_t r0, int64_t r1, int64_t c0, int64_t c1, Tile&& tile, One&& one) {
  for_each_group_tile<2, RN>(
      kGroupRows, r0, r1, c0, c1, [&](int64_t g, int64_t c) { tile(g, true, c); },
      [&](int64_t g, int64_t c) { tile(g, false, c); },
      [&](int64_t g0, int64_t g1, int64_t c) {
        for (int64_t g = g0; g < g1; g += 2) one(g, g + 1 < g1, c);
      });
}

// For a kernel with a wide tile of W tokens and a narrow one of N: per block of tokens, each
// group pair takes W-token tiles, then N-token tiles, then single tokens while its codes are
// in L1, so a batch of any size reads each pair once (for_each_group_pair_tile walks all
// pairs again for each token left over). A one-token decode step walks as it does there.
template <int W, int N, class Wide, class Narrow, class One>
inline void for_each_group_pair_tiles(int64_t r0, int64_t r1, int64_t c0, int64_t c1, Wide&& wide, Narrow&& narrow,
                                      One&& one) {
  const int64_t g0 = r0 / kGroupRows, g1 = (r1 + kGroupRows - 1) / kGroupRows;
  for (int64_t cb = c0; cb < c1; cb += kTokenBlock) {
    const int64_t ce = cb + kTokenBlock < c1 ? cb + kTokenBlock : c1;
    for (int64_t g = g0; g < g1; g += 2) {
      const bool pair = g + 1 < g1;
      int64_t c = cb;
      for (; c + W <= ce; c += W) wide(g, pair, c);
      for (; c + N <= ce; c += N) narrow(g, pair, c);
      for (; c < ce; ++c) one(g, pair, c);
    }
  }
}

}  // namespace ember::cpu::EMBER_AVX512_NS
