// Attention over one sequence's paged, typed KV cache (DevKV), with ops::attention's
// semantics. One tiled flash-attention kernel serves decode and prefill. A block takes a
// tile of R "rows", (query, head) pairs of one KV head, so the query heads of a GQA group
// share every K/V tile they read; its Q tile sits in shared memory as f32 and the keys of
// one chunk stream through one shared K/V tile, 32 keys at a time (dequantised once per
// block), with an online softmax per row. Never a score matrix, only 32 scores per row.
//   prefill (many rows): many row tiles, usually one chunk: the block writes the output.
//   decode (few rows): flash decoding: the keys are split into chunks across blocks, each
//   leaves its partial (max, sum, unnormalised acc) in scratch and a combine kernel merges.
// The chunking depends on the call's shape (rows, and the table's capacity, not the keys it
// holds now: the kernels read the live extent from the device table, so one launch, or a
// CUDA graph of it, serves every length; chunks past the end leave empty partials). Unlike
// the CPU op a row's bits may change with the longest run of rows in the call (a decode
// beside a prompt chunk tiles differently; the values agree to float rounding), never with
// the cache's length.
// head_dim d: any multiple of 8 up to 256. The kernels are compiled for a few tile widths D
// (32, 64, 96, 128, 256: attn_tile_dim) with d a runtime value <= D; columns [d, D) of the
// Q and K/V tiles are zeros, so the inner loops keep their compile-time D (at 64/128/256,
// d == D and nothing is wasted; 16 in a D = 32 tile computes twice the dot products).
#pragma once
#include <cmath>
#include <cstdint>

#include "backend/kv_types.h"
#include "cuda/kernels/device.cuh"
#include "cuda/kernel_api.h"
#include "cuda/kernels/dequant.cuh"
#include "util/error.h"

namespace ember::cuda {

namespace {

constexpr int kAttnKeys = 32;        // keys per tile: one per lane when scoring
constexpr int kAttnPad = 4;          // floats after each tile row: float4 reads free of bank conflicts
constexpr int kAttnMaxWarps = 4;
constexpr int kAttnMaxRowsPerWarp = 8;  // the largest RPW compiled
constexpr int kAttnMaxHeadDim = 256;
// The Q tile: rows x D floats, 8 KiB (32 rows of 64 ... 8 of 256). It keeps shared
// memory under the 48 KiB a launch gets without opting in, and the accumulators of a
// warp's rows (rows_per_warp * head_dim / 32 per lane) clear of ptxas's register limits.
constexpr int kAttnQTileFloats = 2048;
constexpr int kAttnTargetBlocks = 256;  // split keys into chunks until the grid has about this many
constexpr int kAttnMinChunkTiles = 2;   // a chunk is at least this many key tiles
constexpr unsigned kAttnFullMask = 0xffffffffu;

// What one launch reads and writes; rows are (query t, head h) pairs, t-major, and the
// queries come in runs, one per sequence: run r is queries [runs[r], runs[r + 1]) over the
// table kv.table + r * kv.table_stride.
struct AttnArgs {
  const float* q;         // n_q rows, q_stride floats apart
  int64_t q_stride;
  const int32_t* q_pos;
  int64_t n_q;
  const int32_t* runs;    // device: n_runs + 1 query numbers
  int row_tiles;          // row tiles per run (of the longest run; shorter runs' extra tiles idle)
  DevKV kv;
  int head_dim;           // d <= the kernel's D
  int n_head;
  int n_head_kv;
  float scale;
  int window;
  float softcap;
  const float* sinks;     // n_head sink logits (AttentionParams::sinks), or null
  float* out;             // used when n_chunks == 1
  int64_t out_stride;
  float* partial;         // used when n_chunks > 1: attn_partial_floats(d) per (chunk, t, h)
  int n_chunks;
  int chunk_tiles;        // key tiles per chunk
};

__device__ __forceinline__ float attn_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kAttnFullMask, v, o));
  return v;
}
__device__ __forceinline__ float attn_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kAttnFullMask, v, o);
  return v;
}

constexpr int attn_partial_floats(int d) { return d + 2; }  // max, sum, then d of acc

// A row's running max m and sum l with head h's sink folded in (a logit without a value, as
// ops::attention): returns the factor that scales the row's acc; m and l updated. A row that
// saw no key (l == 0) stays empty: its output is zeros either way.
__device__ __forceinline__ float attn_take_sink(const float* sinks, int h, float& m, float& l) {
  if (sinks == nullptr || l == 0.0f) return 1.0f;
  const float s = sinks[h];
  const float m2 = fmaxf(m, s);
  const float scale = expf(m - m2);
  l = l * scale + expf(s - m2);
  m = m2;
  return scale;
}

// Keys (or values) at ordinals [ts, ts + 32) of KV head g (d elements) into the shared
// tile as f32, rows D + kAttnPad apart, columns [0, d); ordinals at or past `end` (another
// chunk's, or none) become zeros. A tile's 32 ordinals are consecutive rows of one block
// (ts - first_slot is a multiple of 32, block_size too), so the table is read once per tile.
// blocks: the table's block entries (kv.table + kDevKVHeader).
// T is a constant here, so the type switches of dequant.cuh fold away inside the loops.
template <int D, DType T>
__device__ __forceinline__ void attn_load_tile_as(float* tile, const int32_t* blocks, int block_size,
                                                  int64_t first_slot, const uint8_t* data, size_t row_bytes,
                                                  int64_t ts, int64_t end, int g, int d) {
  const int64_t first_row =
      static_cast<int64_t>(blocks[(ts - first_slot) / block_size]) * block_size + ts % block_size;
  const uint8_t* base = data + first_row * row_bytes;
  const int n_keys = static_cast<int>(end - ts < kAttnKeys ? end - ts : kAttnKeys);
  const int64_t head0 = static_cast<int64_t>(g) * d;
  constexpr bool kBlocks = dtype_size(T).block_size == 32;  // the quant types
  if (kBlocks && d % 32 == 0) {
    // A thread per (key j, 32-element sub-block sb): the block's scale is decoded once, not
    // per element. j = item % 32, so a warp's float4 stores hit distinct banks (rows are
    // D + 4 floats apart).
    for (int item = threadIdx.x; item < kAttnKeys * (d / 32); item += blockDim.x) {
      const int j = item % kAttnKeys;
      const int sb = item / kAttnKeys;
      float x[32];
      if (j < n_keys) {
        dequant_block32(T, base + j * row_bytes, head0 / 32 + sb, x);
      } else {
#pragma unroll
        for (int l = 0; l < 32; ++l) x[l] = 0.0f;
      }
      float4* dst = reinterpret_cast<float4*>(tile + j * (D + kAttnPad) + sb * 32);
#pragma unroll
      for (int l = 0; l < 8; ++l) dst[l] = make_float4(x[4 * l], x[4 * l + 1], x[4 * l + 2], x[4 * l + 3]);
    }
    return;
  }
  // Element by element (f32/f16, or quantised heads that straddle blocks), lanes on
  // consecutive elements of a row.
  for (int e = threadIdx.x; e < kAttnKeys * D; e += blockDim.x) {
    const int j = e / D;
    const int i = e % D;
    if (i < d) tile[j * (D + kAttnPad) + i] = j < n_keys ? load_element(T, base + j * row_bytes, head0 + i) : 0.0f;
  }
}

// The cache types attention reads: every row of the KV type table (the launcher refuses the
// others).
template <int D>
__device__ void attn_load_tile(float* tile, const int32_t* blocks, int block_size, int64_t first_slot,
                               const void* data, DType type, size_t row_bytes, int64_t ts, int64_t end, int g,
                               int d) {
  const uint8_t* b = static_cast<const uint8_t*>(data);
  kv_type_dispatch(type, [&](auto tag) {
    attn_load_tile_as<D, decltype(tag)::value>(tile, blocks, block_size, first_slot, b, row_bytes, ts, end, g, d);
  });
}

// Lane j's key against the warp's RPW query rows: s[r] = q_r . k_j (unscaled).
template <int D, int RPW>
__device__ __forceinline__ void attn_scores(const float* q_rows, const float* key, float (&s)[RPW]) {
#pragma unroll
  for (int r = 0; r < RPW; ++r) s[r] = 0.0f;
#pragma unroll 4
  for (int i = 0; i < D; i += 4) {
    const float4 k = *reinterpret_cast<const float4*>(key + i);
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      const float4 q = *reinterpret_cast<const float4*>(q_rows + r * D + i);
      s[r] = fmaf(q.x, k.x, fmaf(q.y, k.y, fmaf(q.z, k.z, fmaf(q.w, k.w, s[r]))));
    }
  }
}

// The running softmax state of the warp's rows; lane owns columns lane + 32 c.
template <int D, int RPW>
struct AttnState {
  float m[RPW];
  float l[RPW];
  float acc[RPW][D / 32];
};

// Takes one tile's scores (s: lane j's key, -inf when masked) and the value tile into the
// state: m' = max(m, max s), acc = acc e^(m - m') + sum_j e^(s_j - m') v_j, l likewise.
template <int D, int RPW>
__device__ __forceinline__ void attn_update(AttnState<D, RPW>& st, const float (&s)[RPW], const float* values) {
  const int lane = threadIdx.x % 32;
  float p[RPW];
#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    const float m_new = fmaxf(st.m[r], attn_warp_max(s[r]));
    const float corr = m_new == -INFINITY ? 1.0f : expf(st.m[r] - m_new);
    p[r] = s[r] == -INFINITY ? 0.0f : expf(s[r] - m_new);
    st.l[r] = st.l[r] * corr + attn_warp_sum(p[r]);
    st.m[r] = m_new;
#pragma unroll
    for (int c = 0; c < D / 32; ++c) st.acc[r][c] *= corr;
  }
#pragma unroll 4
  for (int j = 0; j < kAttnKeys; ++j) {
    float v[D / 32];
#pragma unroll
    for (int c = 0; c < D / 32; ++c) v[c] = values[j * (D + kAttnPad) + lane + 32 * c];
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      const float pj = __shfl_sync(kAttnFullMask, p[r], j);
#pragma unroll
      for (int c = 0; c < D / 32; ++c) st.acc[r][c] = fmaf(pj, v[c], st.acc[r][c]);
    }
  }
}

// Grid (row tiles x runs, n_head_kv, n_chunks), blockDim.x = 32 * warps, each warp RPW rows.
// Dynamic shared memory: attn_shared_bytes(D, rows per block).
template <int D, int RPW>
__global__ void __launch_bounds__(kAttnMaxWarps * 32) attention_kernel(AttnArgs a) {
  EMBER_DYNAMIC_SHARED(float, smem);
  __shared__ int row_pos[kAttnMaxWarps * RPW];  // positions are int32, as q_pos
  // The run's first query and query count, and the live extent from its device table (first
  // slot; end clamped to the planned capacity): in shared memory rather than in registers
  // the tile loops need.
  __shared__ int64_t run_q[2];
  __shared__ int64_t extent[2];
  __shared__ const int32_t* blocks;  // the run's table's block entries
  const int rows = static_cast<int>(blockDim.x / 32) * RPW;
  float* q_tile = smem;              // rows x D
  float* kv_tile = smem + rows * D;  // kAttnKeys x (D + kAttnPad): keys, then values
  const int d = a.head_dim;
  const int group = a.n_head / a.n_head_kv;
  const int g = blockIdx.y;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x % a.row_tiles) * rows;
  if (threadIdx.x == 0) {
    const int run = static_cast<int>(blockIdx.x / a.row_tiles);
    const int32_t* table = a.kv.table + run * a.kv.table_stride;
    run_q[0] = a.runs[run];
    run_q[1] = a.runs[run + 1] - a.runs[run];
    extent[0] = table[0];
    extent[1] = extent[0] + a.kv.capacity < table[1] ? extent[0] + a.kv.capacity : table[1];
    blocks = table + kDevKVHeader;
  }
  __syncthreads();
  const int64_t n_rows = run_q[1] * group;
  if (row0 >= n_rows) return;  // a row tile of a shorter run than the longest: the whole block

  for (int e = threadIdx.x; e < rows * D; e += blockDim.x) {
    const int64_t rg = row0 + e / D;
    const int i = e % D;
    const int64_t h = g * group + rg % group;
    q_tile[e] = rg < n_rows && i < d ? a.q[(run_q[0] + rg / group) * a.q_stride + h * d + i] : 0.0f;
  }
  if (d < D) {  // the loads below write columns [0, d) only: the rest stay zero
    for (int e = threadIdx.x; e < kAttnKeys * (D + kAttnPad); e += blockDim.x) kv_tile[e] = 0.0f;
  }
  for (int r = threadIdx.x; r < rows; r += blockDim.x)
    row_pos[r] = row0 + r < n_rows ? a.q_pos[run_q[0] + (row0 + r) / group] : -1;  // -1 sees no key
  __syncthreads();

  // The keys any row of the block can see (every thread computes the same bounds).
  int64_t hi = -1, lo = INT64_MAX;
  for (int r = 0; r < rows; ++r) {
    if (row_pos[r] < 0) continue;
    hi = row_pos[r] > hi ? row_pos[r] : hi;
    const int64_t first = a.window > 0 ? row_pos[r] - a.window + 1 : 0;
    lo = first < lo ? first : lo;
  }
  // A chunk past the keys the sequence holds loads no tile and leaves empty partials.
  const int64_t begin = extent[0] + static_cast<int64_t>(blockIdx.z) * a.chunk_tiles * kAttnKeys;
  const int64_t chunk_end = begin + static_cast<int64_t>(a.chunk_tiles) * kAttnKeys;
  const int64_t end = chunk_end < extent[1] ? chunk_end : extent[1];

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const float* my_q = q_tile + warp * RPW * D;
  int qp[RPW];
  AttnState<D, RPW> st;
#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    qp[r] = row_pos[warp * RPW + r];
    st.m[r] = -INFINITY;
    st.l[r] = 0.0f;
#pragma unroll
    for (int c = 0; c < D / 32; ++c) st.acc[r][c] = 0.0f;
  }

  for (int64_t ts = begin; ts < end && ts <= hi; ts += kAttnKeys) {
    if (ts + kAttnKeys <= lo) continue;  // a tile no row sees leaves every state as it is
    attn_load_tile<D>(kv_tile, blocks, a.kv.block_size, extent[0], a.kv.k, a.kv.k_type, a.kv.k_row_bytes, ts,
                      end, g, d);
    __syncthreads();
    float s[RPW];
    attn_scores<D, RPW>(my_q, kv_tile + lane * (D + kAttnPad), s);
    const int kp = static_cast<int>(ts) + lane;  // ordinal = position, an int32
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      const bool visible = kp < end && kp <= qp[r] && (a.window <= 0 || qp[r] - kp < a.window);
      float x = s[r] * a.scale;
      if (a.softcap > 0.0f) x = a.softcap * tanhf(x / a.softcap);
      s[r] = visible ? x : -INFINITY;
    }
    __syncthreads();
    attn_load_tile<D>(kv_tile, blocks, a.kv.block_size, extent[0], a.kv.v, a.kv.v_type, a.kv.v_row_bytes, ts,
                      end, g, d);
    __syncthreads();
    attn_update<D, RPW>(st, s, kv_tile);
    __syncthreads();
  }

#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    const int64_t rg = row0 + warp * RPW + r;
    if (rg >= n_rows) continue;
    const int64_t t = run_q[0] + rg / group;
    const int h = g * group + static_cast<int>(rg % group);
    if (a.n_chunks == 1) {
      float* dst = a.out + t * a.out_stride + static_cast<int64_t>(h) * d;
      const float acc_scale = attn_take_sink(a.sinks, h, st.m[r], st.l[r]);
      const float inv = st.l[r] > 0.0f ? acc_scale / st.l[r] : 0.0f;
#pragma unroll
      for (int c = 0; c < D / 32; ++c)
        if (lane + 32 * c < d) dst[lane + 32 * c] = st.acc[r][c] * inv;
    } else {
      const int64_t idx = (blockIdx.z * a.n_q + t) * a.n_head + h;
      float* dst = a.partial + idx * attn_partial_floats(d);
      if (lane == 0) {
        dst[0] = st.m[r];
        dst[1] = st.l[r];
      }
#pragma unroll
      for (int c = 0; c < D / 32; ++c)
        if (lane + 32 * c < d) dst[2 + lane + 32 * c] = st.acc[r][c];
    }
  }
}

// One block of head_dim threads per (t, h), blockIdx.x = t * n_head + h: merges the chunks'
// partials, each scaled by e^(m_c - M) with M the largest max, then the head's sink if any
// (attn_take_sink); a row no chunk saw is zeros.
__global__ void attention_combine_kernel(const float* partial, int n_chunks, int64_t n_q, int n_head, int d,
                                         const float* sinks, float* out, int64_t out_stride) {
  const int64_t idx = blockIdx.x;
  const int64_t chunk_stride = n_q * n_head * attn_partial_floats(d);
  const float* p = partial + idx * attn_partial_floats(d);
  float m = -INFINITY;
  for (int c = 0; c < n_chunks; ++c) m = fmaxf(m, p[c * chunk_stride]);
  float l = 0.0f, acc = 0.0f;
  if (m != -INFINITY) {
    for (int c = 0; c < n_chunks; ++c) {
      const float* pc = p + c * chunk_stride;
      const float w = expf(pc[0] - m);
      l = fmaf(pc[1], w, l);
      acc = fmaf(pc[2 + threadIdx.x], w, acc);
    }
  }
  acc *= attn_take_sink(sinks, static_cast<int>(idx % n_head), m, l);
  out[idx / n_head * out_stride + idx % n_head * d + threadIdx.x] = l > 0.0f ? acc / l : 0.0f;
}

// ---- host side ----

// The launch geometry, a function of the shapes only (scratch sizing and launch agree).
struct AttnPlan {
  int warps = 1;
  int rows_per_warp = 1;
  int64_t row_tiles = 1;
  int n_chunks = 1;
  int chunk_tiles = 1;
};

// The tile width D compiled for head_dim d: 64, 128 and 256 exactly, the others padded.
constexpr int attn_tile_dim(int head_dim) {
  return head_dim <= 32 ? 32 : head_dim <= 64 ? 64 : head_dim <= 96 ? 96 : head_dim <= 128 ? 128 : 256;
}

// Rows per warp when the Q tile is full: a power of two, the Q tile within its floats.
constexpr int attn_max_rows_per_warp(int tile_dim) {
  int rpw = kAttnMaxRowsPerWarp;
  while (rpw > 1 && kAttnMaxWarps * rpw * tile_dim > kAttnQTileFloats) rpw /= 2;
  return rpw;
}

inline int64_t attn_tiles(int64_t n_keys) { return n_keys > 0 ? (n_keys + kAttnKeys - 1) / kAttnKeys : 0; }

// How many chunks the keys would be split into at most (before rounding to whole tiles).
inline int64_t attn_wanted_chunks(const AttnPlan& plan, int n_head_kv) {
  const int64_t blocks = plan.row_tiles * n_head_kv;
  return blocks >= kAttnTargetBlocks ? 1 : (kAttnTargetBlocks + blocks - 1) / blocks;
}

// The plan for a table of n_keys keys at most (DevKV::capacity).
inline AttnPlan attention_plan(const AttentionParams& p, int64_t n_q, int64_t n_keys) {
  AttnPlan plan;
  const int64_t rows = n_q * (p.n_head / p.n_head_kv);
  const int max_rpw = attn_max_rows_per_warp(attn_tile_dim(p.head_dim));
  if (rows >= static_cast<int64_t>(kAttnMaxWarps) * max_rpw) {
    plan.warps = kAttnMaxWarps;
    plan.rows_per_warp = max_rpw;
  } else {  // few rows: as many warps as rows (up to 4), then the fewest rows per warp
    plan.warps = static_cast<int>(rows < kAttnMaxWarps ? (rows > 0 ? rows : 1) : kAttnMaxWarps);
    while (static_cast<int64_t>(plan.warps) * plan.rows_per_warp < rows) plan.rows_per_warp *= 2;
  }
  const int64_t tile_rows = static_cast<int64_t>(plan.warps) * plan.rows_per_warp;
  plan.row_tiles = rows > 0 ? (rows + tile_rows - 1) / tile_rows : 1;
  const int64_t tiles = attn_tiles(n_keys);
  const int64_t wanted = attn_wanted_chunks(plan, p.n_head_kv);
  int64_t chunk_tiles = (tiles + wanted - 1) / wanted;
  if (chunk_tiles < kAttnMinChunkTiles) chunk_tiles = kAttnMinChunkTiles;
  plan.chunk_tiles = static_cast<int>(chunk_tiles);
  plan.n_chunks = tiles > 0 ? static_cast<int>((tiles + chunk_tiles - 1) / chunk_tiles) : 1;
  return plan;
}

inline size_t attn_shared_bytes(int tile_dim, int rows) {
  return sizeof(float) *
         (static_cast<size_t>(rows) * tile_dim + static_cast<size_t>(kAttnKeys) * (tile_dim + kAttnPad));
}

// Scratch for the chunk partials of n_q queries in runs of at most max_run_rows, over tables
// of `capacity` keys; none with one chunk.
inline size_t attention_scratch_bytes(const AttentionParams& p, int64_t n_q, int64_t max_run_rows,
                                      int64_t capacity) {
  if (n_q <= 0 || p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0) return 0;
  const AttnPlan plan = attention_plan(p, max_run_rows, capacity);
  if (plan.n_chunks <= 1) return 0;
  return sizeof(float) * static_cast<size_t>(plan.n_chunks * n_q * p.n_head * attn_partial_floats(p.head_dim));
}

template <int D, int RPW>
void attn_launch_rows(const AttnPlan& plan, int n_runs, const AttnArgs& a, Stream s) {
  const dim3 grid(static_cast<unsigned>(plan.row_tiles * n_runs), static_cast<unsigned>(a.n_head_kv),
                  static_cast<unsigned>(plan.n_chunks));
  const size_t shared = attn_shared_bytes(D, plan.warps * RPW);
  auto* const kernel = attention_kernel<D, RPW>;  // no template comma inside the macro
  EMBER_LAUNCH(kernel, grid, dim3(32 * plan.warps), shared, s, a);
}

template <int D>
void attn_launch_head_dim(const AttnPlan& plan, int n_runs, const AttnArgs& a, Stream s) {
  constexpr int kMax = attn_max_rows_per_warp(D);  // no kernel beyond (it would never launch)
  if (plan.rows_per_warp == 1) return attn_launch_rows<D, 1>(plan, n_runs, a, s);
  if (plan.rows_per_warp == 2) return attn_launch_rows<D, 2>(plan, n_runs, a, s);
  if constexpr (kMax >= 4) {
    if (plan.rows_per_warp == 4) return attn_launch_rows<D, 4>(plan, n_runs, a, s);
  }
  if constexpr (kMax >= 8) {
    if (plan.rows_per_warp == 8) return attn_launch_rows<D, 8>(plan, n_runs, a, s);
  }
  fail(ErrorKind::Internal, "attention: no kernel for {} rows per warp at head_dim {}", plan.rows_per_warp, D);
}

inline void attn_check_kv_type(DType type, size_t row_bytes, int64_t cols, const void* data, bool has_keys,
                               const char* name) {
  if (!kv_type_known(type))
    fail(ErrorKind::InvalidArgument, "attention: {} cache type {} is not one of {}", name, dtype_name(type),
         kv_type_names());
  if (cols % dtype_size(type).block_size != 0)  // as the CPU: whole blocks per row (a head may straddle two)
    fail(ErrorKind::InvalidArgument, "attention: {} row of {} elements is not whole {} blocks", name, cols,
         dtype_name(type));
  if (row_bytes < dtype_row_bytes(type, cols) || row_bytes % (type == DType::F32 ? 4 : 2) != 0)
    fail(ErrorKind::InvalidArgument, "attention: {} row stride {} bytes (a row of {} {} needs {}, aligned)", name,
         row_bytes, cols, dtype_name(type), dtype_row_bytes(type, cols));
  if (has_keys && data == nullptr) fail(ErrorKind::InvalidArgument, "attention: {} cache has no data", name);
}

inline void attn_check_args(const MatView& q, const int32_t* q_pos, const DevRuns& runs, const DevKV& kv,
                            const AttentionParams& p, const F32Mat& out) {
  if (p.head_dim <= 0 || p.head_dim > kAttnMaxHeadDim || p.head_dim % 8 != 0)
    fail(ErrorKind::InvalidArgument, "attention: head_dim {} is not a multiple of 8 up to {}", p.head_dim,
         kAttnMaxHeadDim);
  if (p.n_head <= 0 || p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0)
    fail(ErrorKind::InvalidArgument, "attention: {} query heads cannot share {} KV heads", p.n_head, p.n_head_kv);
  if (p.window < 0 || p.softcap < 0.0f)
    fail(ErrorKind::InvalidArgument, "attention: window {} and softcap {} must not be negative", p.window,
         p.softcap);
  const int64_t cols = static_cast<int64_t>(p.n_head) * p.head_dim;
  if (q.type != DType::F32 || q.layout != WeightLayout::Rows || q.cols != cols || q.rows < 0 ||
      q.row_stride < static_cast<size_t>(cols) * sizeof(float) || q.row_stride % sizeof(float) != 0 ||
      (q.rows > 0 && (q.data == nullptr || q_pos == nullptr)))
    fail(ErrorKind::InvalidArgument, "attention: q must be {} f32 rows of {} with positions, not {} {} x {}", q.rows,
         cols, dtype_name(q.type), q.rows, q.cols);
  if (out.rows != q.rows || out.cols != cols || out.stride < cols || (q.rows > 0 && out.data == nullptr))
    fail(ErrorKind::InvalidArgument, "attention: out is {} x {} (stride {}), not {} x {}", out.rows, out.cols,
         out.stride, q.rows, cols);
  if (kv.block_size <= 0 || kv.block_size % kAttnKeys != 0 || kv.capacity < 0 || kv.capacity % kv.block_size != 0 ||
      kv.table == nullptr)
    fail(ErrorKind::InvalidArgument,
         "attention: paged cache of blocks of {} with room for {} keys (blocks of whole 32-key tiles, a table)",
         kv.block_size, kv.capacity);
  if (q.rows > 0 && (runs.bounds == nullptr || runs.n <= 0 || runs.max_rows <= 0 || runs.max_rows > q.rows ||
                     (runs.n > 1 && kv.table_stride < kDevKVHeader + kv.capacity / kv.block_size)))
    fail(ErrorKind::InvalidArgument,
         "attention: {} runs of at most {} of the {} queries, tables {} ints apart (room for {} blocks each)", runs.n,
         runs.max_rows, q.rows, kv.table_stride, kv.capacity / kv.block_size);
  const int64_t kv_cols = static_cast<int64_t>(p.n_head_kv) * p.head_dim;
  attn_check_kv_type(kv.k_type, kv.k_row_bytes, kv_cols, kv.k, kv.capacity > 0, "K");
  attn_check_kv_type(kv.v_type, kv.v_row_bytes, kv_cols, kv.v, kv.capacity > 0, "V");
}

// ops::attention of each run of q's rows (q_pos a device array) over its sequence's table in
// kv, one launch for all; scratch holds attention_scratch_bytes(p, q.rows, runs.max_rows,
// kv.capacity) bytes (may be null when that is 0). The plan depends on the longest run and
// the capacity, not on how many runs there are or the keys they hold.
inline void launch_attention(const MatView& q, const int32_t* q_pos, const DevRuns& runs, const DevKV& kv,
                             const AttentionParams& p, F32Mat out, void* scratch, Stream s) {
  attn_check_args(q, q_pos, runs, kv, p, out);
  if (q.rows == 0) return;
  const AttnPlan plan = attention_plan(p, runs.max_rows, kv.capacity);
  if (plan.n_chunks > 1 && scratch == nullptr)
    fail(ErrorKind::InvalidArgument, "attention: no scratch for {} chunk partials", plan.n_chunks);
  if (plan.row_tiles * runs.n > 0x7fffffff)
    fail(ErrorKind::InvalidArgument, "attention: {} runs of {} row tiles exceed a grid", runs.n, plan.row_tiles);
  AttnArgs a{};
  a.q = static_cast<const float*>(q.data);
  a.q_stride = static_cast<int64_t>(q.row_stride / sizeof(float));
  a.q_pos = q_pos;
  a.n_q = q.rows;
  a.runs = runs.bounds;
  a.row_tiles = static_cast<int>(plan.row_tiles);
  a.kv = kv;
  a.head_dim = p.head_dim;
  a.n_head = p.n_head;
  a.n_head_kv = p.n_head_kv;
  a.scale = p.scale;
  a.window = p.window;
  a.softcap = p.softcap;
  a.sinks = p.sinks;
  a.out = out.data;
  a.out_stride = out.stride;
  a.partial = static_cast<float*>(scratch);
  a.n_chunks = plan.n_chunks;
  a.chunk_tiles = plan.chunk_tiles;
  switch (attn_tile_dim(p.head_dim)) {
    case 32: attn_launch_head_dim<32>(plan, runs.n, a, s); break;
    case 64: attn_launch_head_dim<64>(plan, runs.n, a, s); break;
    case 96: attn_launch_head_dim<96>(plan, runs.n, a, s); break;
    case 128: attn_launch_head_dim<128>(plan, runs.n, a, s); break;
    default: attn_launch_head_dim<256>(plan, runs.n, a, s); break;
  }
  if (plan.n_chunks > 1)
    EMBER_LAUNCH(attention_combine_kernel, static_cast<unsigned>(q.rows * p.n_head), dim3(p.head_dim), 0, s,
                 a.partial, plan.n_chunks, q.rows, p.n_head, p.head_dim, p.sinks, out.data, out.stride);
}

}  // namespace

}  // namespace ember::cuda
