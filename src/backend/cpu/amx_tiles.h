// What the AMX kernels (matmul_packed_amx.h) share: the tile configuration, the per-thread
// staging buffer for weight tiles, the walk over rows and tokens and the pipeline of a
// format's blocks (tile_kernel at the end).
// Included by *_amx.cpp files only, after avx512_intrinsics.h (built with -mamx-tile
// -mamx-int8 besides the AVX-512 flags).
#pragma once
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "backend/cpu/matmul_kernels.h"
#include "backend/cpu/avx512_intrinsics.h"

// GCC names the flags' macros __AMX_TILE__ / __AMX_INT8__, clang (14, the fuzz and sanitizer
// compiler) __AMXTILE__ / __AMXINT8__.
#if !(defined(__AMX_TILE__) || defined(__AMXTILE__)) || !(defined(__AMX_INT8__) || defined(__AMXINT8__))
#error "*_amx.cpp files are built with -mamx-tile -mamx-int8"
#endif

namespace ember::cpu::amx {

constexpr int kTileTokens = 16;  // the rows of an A or C tile
constexpr int kGroupRows = 8;    // the AVX2 kernels' group height; a tile's 16 columns: two groups

// Tokens per block of the walk: a pair of groups is staged once per block. Twice the AVX
// kernels' kTokenBlock: staging costs a tenth of the Q4_K kernel's time at 64 (perf, pp512),
// and bench-ops (4096 x 4096, 512 tokens, one thread, two alternated rounds) measured
// 128 against 64 and 256: Q8_0 417/391 vs 237/335 vs 341/354 GFLOP/s, Q4_K 450/469 vs
// 298/403 vs 445/459, Q6_K 468/303 vs 186/257 vs 286/299 (a busy shared machine).
constexpr int64_t kAmxTokenBlock = 2 * kTokenBlock;

// The 64-byte operand of ldtilecfg (palette 1): tile i has rows[i] rows of colsb[i] bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};

  // Tile i as rows x colsb.
  constexpr TileConfig& tile(int i, int n_rows, int n_colsb) {
    rows[i] = static_cast<uint8_t>(n_rows);
    colsb[i] = static_cast<uint16_t>(n_colsb);
    return *this;
  }
};
static_assert(sizeof(TileConfig) == 64, "ldtilecfg reads 64 bytes");

// Loads the configuration for the call and releases the tiles when it ends (a thread that
// holds none has no tile state for the OS to save at a context switch).
class TileScope {
 public:
  explicit TileScope(const TileConfig& config) { _tile_loadconfig(&config); }
  ~TileScope() { _tile_release(); }
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;
};

// The tile instructions, with the tile numbers as template arguments. GCC 12's intrinsics
// (_tile_loadd and friends) paste their tile argument into the instruction text, so they take
// only literal numbers, and their asm declares no memory effects: a tile load could then be
// moved before the stores that fill its buffer, or a load of the buffer before the tile store.
// These say "memory" so that every tile instruction stays in order with the code around it.
template <int T>
inline void tile_load(const void* base, size_t stride) {
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm%c2" : : "r"(base), "r"(stride), "i"(T) : "memory");
}
template <int T>
inline void tile_store(void* base, size_t stride) {
  __asm__ volatile("tilestored %%tmm%c2, (%0,%1,1)" : : "r"(base), "r"(stride), "i"(T) : "memory");
}
template <int T>
inline void tile_zero() {
  __asm__ volatile("tilezero %%tmm%c0" : : "i"(T) : "memory");
}
// C += A x B over signed A and signed B bytes (tdpbssd), or signed A, unsigned B (tdpbsud).
template <int C, int A, int B>
inline void tile_dot_ss() {
  __asm__ volatile("tdpbssd %%tmm%c2, %%tmm%c1, %%tmm%c0" : : "i"(C), "i"(A), "i"(B) : "memory");
}
template <int C, int A, int B>
inline void tile_dot_su() {
  __asm__ volatile("tdpbsud %%tmm%c2, %%tmm%c1, %%tmm%c0" : : "i"(C), "i"(A), "i"(B) : "memory");
}

namespace {  // NOLINT(google-build-namespaces): internal linkage, see staging_buffer

// This thread's buffer of at least `bytes` bytes, 64-byte aligned, kept across calls. Plain
// C allocation on purpose: a std::vector instantiated here would be compiled with the AMX
// and AVX-512 flags, and the linker may keep that copy of its members for the whole program,
// which would then fail on a CPU without AVX-512.
inline uint8_t* staging_buffer(size_t bytes) {
  struct Buffer {
    void* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffer;
  if (buffer.size < bytes) {
    const size_t size = (bytes + 63) / 64 * 64;
    void* fresh = std::aligned_alloc(64, size);
    if (!fresh) throw std::bad_alloc();
    std::free(buffer.data);
    buffer.data = fresh;
    buffer.size = size;
  }
  return static_cast<uint8_t*>(buffer.data);
}

}  // namespace

// The walk of an AMX kernel over rows [r0, r1) and tokens [c0, c1): per block of
// kAmxTokenBlock tokens and pair of groups (g, and g+1 when pair), stage(g, pair) lays out the
// weight tiles once, then tiles(g, pair, c, n) computes n (1 or 2) 16-token tiles from token
// c. The tokens left after the last whole 16 go to `rest` (the AVX-512 kernel), over the same
// rows. A kernel stores min(16, r1 - 8g) rows of a pair: a group without its pair is the
// range's last.
template <class Stage, class Tiles>
inline void for_each_pair_tile16(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1, TileFn rest,
                                 Stage&& stage, Tiles&& tiles) {
  const int64_t c_full = c0 + (c1 - c0) / kTileTokens * kTileTokens;
  const int64_t g0 = r0 / kGroupRows, g1 = (r1 + kGroupRows - 1) / kGroupRows;
  for (int64_t cb = c0; cb < c_full; cb += kAmxTokenBlock) {
    const int64_t ce = cb + kAmxTokenBlock < c_full ? cb + kAmxTokenBlock : c_full;
    for (int64_t g = g0; g < g1; g += 2) {
      const bool pair = g + 1 < g1;
      stage(g, pair);
      for (int64_t c = cb; c < ce; c += 2 * kTileTokens) tiles(g, pair, c, c + 2 * kTileTokens <= ce ? 2 : 1);
    }
  }
  if (c_full < c1) rest(p, r0, r1, c_full, c1);
}

// The two groups a kernel reads (hi is lo again without a pair: its lanes are not stored).
struct GroupPair {
  const uint8_t* lo;
  const uint8_t* hi;
  GroupPair(const MatmulArgs& p, int64_t g, bool pair) : lo(p.w + g * p.w_stride), hi(pair ? lo + p.w_stride : lo) {}
};

// A weight format's AMX kernel, as a policy class F:
//   static constexpr TileConfig kConfig;
//   static constexpr size_t kStagedBytes;       // weight tiles per block (super-block or block)
//   static constexpr int kMaxTokenTiles;        // 1 or 2 token tiles per step (tiles permitting)
//   static constexpr int kParts;                // start's parts (1, 2 or 4), see below
//   static int64_t blocks(int64_t k);
//   static void stage(const MatmulArgs&, const GroupPair&, int64_t b, uint8_t* out);  // block b's tiles
//   struct Sums;                                // one token tile's integer sums of a block
//   template <int NT> static void start(const MatmulArgs&, const uint8_t* staged, int64_t c, int64_t b, int part);
//   template <int NT> static void store(Sums* out);  // the sums start() began, NT token tiles
//   struct Finish {
//     Finish(const MatmulArgs&, const GroupPair&, int64_t b);  // the block's weight factors
//     void operator()(const MatmulArgs&, int64_t c, int t0, int t1, int64_t b, const Sums*, __m512* acc) const;
//   };
// start(part) issues part `part` of the tile products of block b for NT token tiles from
// token c (part 0 zeroes the sums); Finish does the AVX-512 kernel's f32 steps of block b
// for tokens c + t0 .. c + t1 - 1, acc[t] token c + t's 16 rows.

// NT token tiles from c of one pair of groups: block b+1's tile products run while block b's
// sums are finished in f32, interleaved part by part: the tile instructions complete late,
// and the f32 work of a few tokens between them keeps the reorder window from filling with a
// long run of either. Against starting the whole block before finishing the last (pp512,
// Q4_K_M, 2 threads, three alternated rounds on a busy machine): 211/215/175 -> 225/224/218 t/s.
template <class F, int NT>
void pipelined_token_tiles(const MatmulArgs& p, const uint8_t* staged, const GroupPair& pr, int64_t g, int64_t r_end,
                           int64_t c) {
  constexpr int n = NT * kTileTokens, per_part = n / F::kParts;
  static_assert(n % F::kParts == 0, "whole tokens per part");
  const int64_t nb = F::blocks(p.k);
  typename F::Sums sums[2][NT];
  __m512 acc[n];
  for (__m512& v : acc) v = _mm512_setzero_ps();
  for (int part = 0; part < F::kParts; ++part) F::template start<NT>(p, staged, c, 0, part);
  F::template store<NT>(sums[0]);
  for (int64_t b = 0; b < nb; ++b) {
    const typename F::Finish finish(p, pr, b);
    for (int part = 0; part < F::kParts; ++part) {
      if (b + 1 < nb) F::template start<NT>(p, staged, c, b + 1, part);
      finish(p, c, part * per_part, (part + 1) * per_part, b, sums[b % 2], acc);
    }
    if (b + 1 < nb) F::template store<NT>(sums[(b + 1) % 2]);
  }
  const int64_t rows = r_end - g * kGroupRows;
  for (int t = 0; t < n; ++t) avx512::simd512::store_rows(p.y + (c + t) * p.y_stride + g * kGroupRows, acc[t], rows);
}

// The tile function of format F: AMX for whole 16-token tiles, `rest` (the AVX-512 kernel)
// for the tokens left over.
template <class F>
void tile_kernel(const MatmulArgs& p, int64_t r0, int64_t r1, int64_t c0, int64_t c1, TileFn rest) {
  const TileScope tiles(F::kConfig);
  uint8_t* staged = staging_buffer(static_cast<size_t>(F::blocks(p.k)) * F::kStagedBytes);
  for_each_pair_tile16(
      p, r0, r1, c0, c1, rest,
      [&](int64_t g, bool pair) {
        const GroupPair pr(p, g, pair);
        for (int64_t b = 0; b < F::blocks(p.k); ++b) F::stage(p, pr, b, staged + b * F::kStagedBytes);
      },
      [&](int64_t g, bool pair, int64_t c, int n_tiles) {
        const GroupPair pr(p, g, pair);
        if constexpr (F::kMaxTokenTiles == 2)
          if (n_tiles == 2) return pipelined_token_tiles<F, 2>(p, staged, pr, g, r1, c);
        for (int i = 0; i < n_tiles; ++i) pipelined_token_tiles<F, 1>(p, staged, pr, g, r1, c + i * kTileTokens);
      });
}

}  // namespace ember::cpu::amx
