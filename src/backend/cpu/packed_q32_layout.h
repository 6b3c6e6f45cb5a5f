// The packed layout of the 4- and 5-bit 32-element formats (Q4_0, Q5_0, Q4_1, Q5_1) in
// groups of 8 rows, shared by their AVX2 kernels (which pack it) and their AVX-512 kernels
// (which read it): matmul_packed_q32_avx2.cpp, matmul_packed_q32_avx512.cpp. Q8_0 and
// MXFP4 have their own.
//
// Per 32-element block b of the group, the 8 rows' blocks become (exactly their bytes):
//   8 x fp16  the rows' scales d
//   8 x fp16  the rows' offsets m                    (Q4_1, Q5_1)
//   8 x 4 B   the rows' fifth bits, dword r = row r  (Q5_0, Q5_1; see fifth_bit_plane)
//   4 x 32 B  the low 4 bits of the codes: load q holds, for row r = 0..7, bytes 4q..4q+3
//             of the row's qs: low nibbles are elements 4q..4q+3, high nibbles elements
//             16+4q..16+4q+3.
// So one 32-byte load and a mask give the same four elements of all 8 rows. One load of the
// plane serves the block's 4 code loads: load q's fifth bits are bit q (low nibbles) and
// bit 4+q (high nibbles) of each plane byte, moved to bit 4 by one shift each. Keeping the
// file's bytes (no pre-expanded 5-bit codes) keeps decode, which is memory bound, reading
// no more than the file. Measured against the row-layout kernels (this project's Intel
// Xeon VM, AVX-512 VNNI, 2 threads, ember bench -p 128 -n 64, alternated, medians):
// Qwen2.5-0.5B "Q4_K_M" (Q5_0 for most matrices) tg64 39% -> 81% of the roofline (2.1x),
// pp128 2.2-3.0x; SmolLM2-135M Q4_1 tg64 2.1x, pp128 4.6x; the same requantized to Q5_1
// tg64 2.1x, pp128 4.5x.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tensor/dtype.h"

namespace ember::cpu::packed32 {

// The functions below are static: this header is included by translation units built for
// different instruction sets (AVX2, AVX-512, none), and each keeps its own copy, so the
// linker cannot hand one built with wider instructions to code that runs without them.

constexpr int kRows = 8;
constexpr int kCodeLoads = 4;  // 32-byte loads of code nibbles per block

// What a format adds to 4-bit codes, and where each part of a block lies.
template <class BlockT, bool FifthBit, bool Offset>
struct Format {
  using Block = BlockT;
  static constexpr bool kFifthBit = FifthBit;  // 5-bit codes u in [0, 31], else 4-bit
  static constexpr bool kOffset = Offset;      // x = d*u + m, else x = d*(u - kBias)
  static constexpr int kBias = Offset ? 0 : FifthBit ? 16 : 8;
  static constexpr size_t kScales = 0;
  static constexpr size_t kOffsets = kScales + 2 * kRows;
  static constexpr size_t kPlane = kOffsets + (Offset ? 2 * kRows : 0);
  static constexpr size_t kCodes = kPlane + (FifthBit ? 4 * kRows : 0);
  static constexpr size_t kBlockBytes = kCodes + 32 * kCodeLoads;
  static_assert(kBlockBytes == kRows * sizeof(Block), "the packed block keeps the file's bytes");
};

using Q4_0 = Format<block_q4_0, false, false>;
using Q5_0 = Format<block_q5_0, true, false>;
using Q4_1 = Format<block_q4_1, false, true>;
using Q5_1 = Format<block_q5_1, true, true>;

template <class F>
static inline size_t group_bytes(int64_t k) {
  return static_cast<size_t>(k / 32) * F::kBlockBytes;
}

// One row's 32 fifth bits (bit j: element j, as in qh) rearranged so that byte i holds, at
// bit q, element 4q+i's and, at bit 4+q, element 16+4q+i's (q = 0..3): the bits that code
// load q needs for the nibbles of its byte i.
static inline uint32_t fifth_bit_plane(const uint8_t qh[4]) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  uint32_t plane = 0;
  for (int i = 0; i < 4; ++i)
    for (int q = 0; q < 4; ++q) {
      plane |= ((bits >> (4 * q + i)) & 1u) << (8 * i + q);
      plane |= ((bits >> (16 + 4 * q + i)) & 1u) << (8 * i + 4 + q);
    }
  return plane;
}

// Packs rows [0, n_rows) of a row-layout matrix into one group (missing rows: all zero).
template <class F>
static inline void pack_group(const uint8_t* w, size_t w_stride, int n_rows, int64_t k, uint8_t* dst) {
  std::memset(dst, 0, group_bytes<F>(k));
  for (int64_t b = 0; b < k / 32; ++b) {
    uint8_t* out = dst + b * F::kBlockBytes;
    for (int r = 0; r < n_rows; ++r) {
      const typename F::Block& blk = reinterpret_cast<const typename F::Block*>(w + r * w_stride)[b];
      std::memcpy(out + F::kScales + 2 * r, &blk.d, 2);
      if constexpr (F::kOffset) std::memcpy(out + F::kOffsets + 2 * r, &blk.m, 2);
      if constexpr (F::kFifthBit) {
        const uint32_t plane = fifth_bit_plane(blk.qh);
        std::memcpy(out + F::kPlane + 4 * r, &plane, 4);
      }
      for (int q = 0; q < kCodeLoads; ++q) std::memcpy(out + F::kCodes + 32 * q + 4 * r, blk.qs + 4 * q, 4);
    }
  }
}

}  // namespace ember::cpu::packed32
