// Internals of the tiled attention (attention.cpp): the inner kernels it is built from, one
// set per SIMD level, and the shared rules (argument checks, key visibility) that the
// reference loop (attention_reference.cpp) uses too.
#pragma once
#include <cstdint>

#include "backend/ops.h"

namespace ember::attn {

// Query rows go through a key tile in blocks of kLanes rows that read the same KV head: the
// rows are the lanes of a vector, so the online softmax of the whole block is a few vector
// ops per key. Every row is computed alone (no lane, block or batch neighbour changes its
// bits), which is what lets a query in a verify batch give bitwise what it gives alone.
constexpr int kLanes = 8;
// Below this many query heads per KV head, rows go through a tile each in its own
// arithmetic instead (tile_row), whatever the batch: the choice never depends on how many
// tokens come along.
constexpr int kMinLaneGroup = 4;
constexpr int kKeyTile = 32;  // keys per tile: a 32 x 128 f32 K tile is 16 KiB (L1)

// One block of rows against one tile of keys: the running max m, running sum l and
// unnormalised output acc of each row take in the tile's keys (online softmax):
//   m' = max(m, max_j s_j);  acc = acc * e^(m - m') + sum_j e^(s_j - m') v_j;  l likewise
// with s_j = softcap(q . k_j) and s_j = -inf where key j is not visible to the row.
struct TileRows {
  const float* q;          // kLanes rows of d, already scaled; rows >= n_rows are read, never used
  const int32_t* q_pos;    // n_rows positions
  int n_rows;              // 1..kLanes
  int d;
  const float* const* k;   // nk key rows of d
  const float* const* v;   // nk value rows of d
  const uint16_t* const* k16;  // or, for the _f16 kernels, nk f16 key rows of d in the cache
  const uint16_t* const* v16;  // and value rows
  const int32_t* k_pos;    // nk key positions (-1: empty slot)
  int nk;                  // 1..kKeyTile
  bool all_visible;        // every key is visible to every row: no mask needed
  int window;              // sliding window (0: none), as key_visible
  float softcap;           // 0: none
  float* m;                // running max of each row (-inf before its first visible key)
  float* l;                // running sum of e^(s - m) of each row; m and l: kLanes readable, n_rows written
  float* acc;              // n_rows rows of d
};

// The tile primitives, one set per SIMD level.
struct Kernels {
  // Rows of `parts` runs of n elements (rows row_bytes apart from src) decoded from `type`
  // (a KV type, backend/kv_types.h), run-major: dst[p * part_stride + j * n + i] = element p * n + i
  // of row j. The rows are read in order, front to back. n is a multiple of the type's
  // block size and src starts on a block boundary.
  void (*to_f32_rows)(DType type, const uint8_t* src, size_t row_bytes, int n_rows, int parts, int64_t n, float* dst,
                      size_t part_stride);
  // One block of rows against one key tile (TileRows), the rows in the lanes.
  void (*tile_rows)(const TileRows& t);
  // The same with the keys in the lanes instead, each row computed as it would be alone
  // (the rows only share loads).
  void (*tile_row)(const TileRows& t);
  // tile_row and tile_rows reading f16 K/V rows in place (TileRows::k16, v16), each element
  // converted as it is loaded: the same values in the same order as from a decoded tile, so
  // the same bits. Null where a level has none (an f16 tile is then decoded first).
  void (*tile_row_f16)(const TileRows& t);
  void (*tile_rows_f16)(const TileRows& t);
};

const Kernels& scalar_kernels();  // attention_scalar.cpp
const Kernels& avx2_kernels();    // attention_avx2.cpp: call only when the CPU has AVX2+FMA+F16C

// A key at position k_pos (-1: empty slot) is visible to a query at q_pos when it is not in
// the future and, with a sliding window, fewer than `window` positions back.
inline bool key_visible(int32_t q_pos, int32_t k_pos, int window) {
  return k_pos >= 0 && k_pos <= q_pos && (window <= 0 || q_pos - k_pos < window);
}

// Throws InvalidArgument naming the problem (types, shapes, strides, head counts).
void check_args(const MatView& q, const int32_t* q_pos, const KVView& kv, const AttentionParams& p,
                const F32Mat& out);

}  // namespace ember::attn
