// AVX2 tile kernels of the tiled attention (attention.cpp): K/V decoding with F16C and
// integer widening, and a block of up to eight query rows against a key tile with the rows
// as vector lanes: 4-row x 2-key register-blocked dot products for the scores, the online
// softmax eight rows at a time (vector exp, soft-cap and visibility mask), and a 4-row x
// 24-column (then 2-row x 32-column) blocked P.V accumulation; and rows each in its own
// arithmetic against a tile, keys in the lanes. Both also read f16 K/V rows in place.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "backend/cpu/attention_kernels.h"
#include "backend/cpu/simd_math_avx2.h"
#include "tensor/fp16.h"

namespace ember::attn {
namespace {

// n elements of one row of type T (f16, q8_0, q4_0) as f32.
template <DType T>
inline void to_f32(const uint8_t* src, float* dst, int64_t n) {
  if constexpr (T == DType::F16) {
    const uint16_t* h = reinterpret_cast<const uint16_t*>(src);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i))));
    for (; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
  } else if constexpr (T == DType::Q8_0) {
    const block_q8_0* b = reinterpret_cast<const block_q8_0*>(src);
    for (int64_t blk = 0; blk < n / QK8_0; ++blk, dst += QK8_0) {
      const __m256 d = _mm256_set1_ps(fp16_to_f32(b[blk].d));
      for (int k = 0; k < 4; ++k) {
        const __m128i q8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b[blk].qs + 8 * k));
        _mm256_storeu_ps(dst + 8 * k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8))));
      }
    }
  } else {
    static_assert(T == DType::Q4_0);
    const block_q4_0* b = reinterpret_cast<const block_q4_0*>(src);
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m256i eight = _mm256_set1_epi32(8);
    for (int64_t blk = 0; blk < n / QK4_0; ++blk, dst += QK4_0) {
      const __m256 d = _mm256_set1_ps(fp16_to_f32(b[blk].d));
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[blk].qs));
      const __m128i lo = _mm_and_si128(packed, low4);                     // elements 0..15
      const __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), low4);  // elements 16..31
      const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
      for (int k = 0; k < 4; ++k) {
        const __m256i q = _mm256_sub_epi32(_mm256_cvtepu8_epi32(parts[k]), eight);
        _mm256_storeu_ps(dst + 8 * k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(q)));
      }
    }
  }
}

template <DType T>
void to_f32_rows_of(const uint8_t* src, size_t row_bytes, int n_rows, int parts, int64_t n, float* dst,
                    size_t part_stride) {
  const size_t part_bytes = dtype_row_bytes(T, n);
  for (int j = 0; j < n_rows; ++j)
    for (int p = 0; p < parts; ++p) to_f32<T>(src + j * row_bytes + p * part_bytes, dst + p * part_stride + j * n, n);
}

// One switch on the type per tile, not per row: rows are a head_dim long here. f32 caches
// are read in place (decode_tile) and never come here; any other type takes the scalar path.
void to_f32_rows(DType type, const uint8_t* src, size_t row_bytes, int n_rows, int parts, int64_t n, float* dst,
                 size_t part_stride) {
  switch (type) {
    case DType::F16: return to_f32_rows_of<DType::F16>(src, row_bytes, n_rows, parts, n, dst, part_stride);
    case DType::Q8_0: return to_f32_rows_of<DType::Q8_0>(src, row_bytes, n_rows, parts, n, dst, part_stride);
    case DType::Q4_0: return to_f32_rows_of<DType::Q4_0>(src, row_bytes, n_rows, parts, n, dst, part_stride);
    default: return scalar_kernels().to_f32_rows(type, src, row_bytes, n_rows, parts, n, dst, part_stride);
  }
}

// Eight elements of a K or V row as f32: f32 rows (decoded tiles, f32 caches) or f16 rows
// read in place from the cache by tile_row<uint16_t> (vcvtph2ps is exact: the same values).
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline float elem(const float* p, int x) { return p[x]; }
inline float elem(const uint16_t* p, int x) { return fp16_to_f32(p[x]); }

// The tile's key and value rows in the element type E the kernel was instantiated for.
template <class E>
const E* const* key_rows(const TileRows& t) {
  if constexpr (std::is_same_v<E, float>) return t.k;
  else return t.k16;
}
template <class E>
const E* const* value_rows(const TileRows& t) {
  if constexpr (std::is_same_v<E, float>) return t.v;
  else return t.v16;
}

// Rows 0-3 of a block against NK keys, over the first d8 elements of d: out[c] = {r0.kc,
// r1.kc, r2.kc, r3.kc}. Each sum runs its own accumulator and is reduced by the same tree
// (hsum4), so a row's score does not depend on which lane, block or key group it sits in.
// Each query vector is loaded once for all NK keys (the empty asm keeps GCC from folding it
// into every FMA, which made the loop load-bound).
template <int NK, class E>
inline void dot_4rows(const float* q, int d, const E* const* k, int d8, __m128* out) {
  __m256 a[4 * NK];
  for (__m256& v : a) v = _mm256_setzero_ps();
  for (int x = 0; x < d8; x += 8) {
    __m256 kv[NK];
    for (int c = 0; c < NK; ++c) kv[c] = load8(k[c] + x);
    for (int r = 0; r < 4; ++r) {
      __m256 qv = _mm256_loadu_ps(q + r * d + x);
      asm("" : "+x"(qv));
      for (int c = 0; c < NK; ++c) a[4 * c + r] = _mm256_fmadd_ps(qv, kv[c], a[4 * c + r]);
    }
  }
  for (int c = 0; c < NK; ++c) out[c] = simd::hsum4(a[4 * c], a[4 * c + 1], a[4 * c + 2], a[4 * c + 3]);
}

// s[j * kLanes + r] = q_r . k_j for every key of the tile (lanes >= n_rows hold junk): keys
// three at a time (12 accumulators), then one or two.
template <class E>
void block_scores(const TileRows& t, float* s) {
  const E* const* k = key_rows<E>(t);
  const int d = t.d, d8 = d / 8 * 8;
  const bool upper = t.n_rows > 4;
  int j = 0;
  auto keys = [&]<int NK>() {
    __m128 lo[NK], hi[NK];
    dot_4rows<NK>(t.q, d, k + j, d8, lo);
    if (upper) dot_4rows<NK>(t.q + 4 * d, d, k + j, d8, hi);
    for (int c = 0; c < NK; ++c) {
      _mm_store_ps(s + (j + c) * kLanes, lo[c]);
      _mm_store_ps(s + (j + c) * kLanes + 4, upper ? hi[c] : _mm_setzero_ps());
    }
    j += NK;
  };
  while (j + 3 <= t.nk) keys.template operator()<3>();
  if (j + 2 <= t.nk) keys.template operator()<2>();
  if (j < t.nk) keys.template operator()<1>();
  if (d8 < d)
    for (j = 0; j < t.nk; ++j)
      for (int r = 0; r < t.n_rows; ++r)
        for (int x = d8; x < d; ++x) s[j * kLanes + r] += t.q[r * d + x] * elem(k[j], x);
}

// Lanes where key position kp is visible to query position qp (as key_visible): a filled
// slot, not in the future, and within the window when there is one.
inline __m256i visible_lanes(__m256i kp, __m256i qp, int window) {
  __m256i v = _mm256_andnot_si256(_mm256_cmpgt_epi32(kp, qp), _mm256_cmpgt_epi32(kp, _mm256_set1_epi32(-1)));
  if (window > 0) v = _mm256_and_si256(v, _mm256_cmpgt_epi32(_mm256_set1_epi32(window), _mm256_sub_epi32(qp, kp)));
  return v;
}

// cap * tanh(x / cap), with tanh(y) = 1 - 2 / (e^(2y) + 1) (exact limits +-1).
inline __m256 softcap256(__m256 x, float cap) {
  const __m256 e = simd::exp256(_mm256_mul_ps(x, _mm256_set1_ps(2.0f / cap)));
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_mul_ps(_mm256_set1_ps(cap),
                       _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one))));
}

// acc[r..r+R) = acc * correction + sum_j p_j v_j, one key after another: row r + i's p_j
// is s[j * key_stride + (r + i) * row_stride] (tile_rows' lanes: kLanes and 1; tile_row's
// rows: 1 and kKeyTile).
template <class E, int R>
inline void block_values(const TileRows& t, const float* s, int key_stride, int row_stride, const float* correction,
                         int r) {
  const int d = t.d;
  const E* const* v = value_rows<E>(t);
  float* acc = t.acc + static_cast<size_t>(r) * d;
  auto run = [&]<int W>(int x) {
    __m256 a[R][W];
    for (int i = 0; i < R; ++i) {
      const __m256 c = _mm256_set1_ps(correction[r + i]);
      for (int w = 0; w < W; ++w) a[i][w] = _mm256_mul_ps(_mm256_loadu_ps(acc + i * d + x + 8 * w), c);
    }
    for (int j = 0; j < t.nk; ++j) {
      __m256 vv[W];
      for (int w = 0; w < W; ++w) vv[w] = load8(v[j] + x + 8 * w);
      for (int i = 0; i < R; ++i) {
        const __m256 p = _mm256_broadcast_ss(s + j * key_stride + (r + i) * row_stride);
        for (int w = 0; w < W; ++w) a[i][w] = _mm256_fmadd_ps(p, vv[w], a[i][w]);
      }
    }
    for (int i = 0; i < R; ++i)
      for (int w = 0; w < W; ++w) _mm256_storeu_ps(acc + i * d + x + 8 * w, a[i][w]);
  };
  // One row (R = 1) takes 64 columns at a time: its 8 accumulators are independent chains,
  // where 4 wait on the FMA latency; four rows take 24 (12 chains, 16 registers with the
  // values and the broadcast). The width changes no element's order of operations.
  int x = 0;
  if constexpr (R == 1)
    for (; x + 64 <= d; x += 64) run.template operator()<8>(x);
  if constexpr (R == 4) {
    for (; x + 24 <= d; x += 24) run.template operator()<3>(x);
  } else {
    for (; x + 32 <= d; x += 32) run.template operator()<4>(x);
  }
  for (; x + 16 <= d; x += 16) run.template operator()<2>(x);
  for (; x + 8 <= d; x += 8) run.template operator()<1>(x);
  for (; x < d; ++x)
    for (int i = 0; i < R; ++i) {
      float a = acc[i * d + x] * correction[r + i];
      for (int j = 0; j < t.nk; ++j) a = std::fma(s[j * key_stride + (r + i) * row_stride], elem(v[j], x), a);
      acc[i * d + x] = a;
    }
}

// block_values over rows [r, end): four at a time, then two, then one.
template <class E>
inline void rows_values(const TileRows& t, const float* s, int key_stride, int row_stride, const float* correction,
                        int r, int end) {
  for (; r + 4 <= end; r += 4) block_values<E, 4>(t, s, key_stride, row_stride, correction, r);
  for (; r + 2 <= end; r += 2) block_values<E, 2>(t, s, key_stride, row_stride, correction, r);
  if (r < end) block_values<E, 1>(t, s, key_stride, row_stride, correction, r);
}

template <class E>
void tile_rows(const TileRows& t) {
  alignas(32) float s[kKeyTile * kLanes];
  block_scores<E>(t, s);

  // Soft-cap and mask every key's lane vector, and take the tile's max per row.
  alignas(32) int32_t q_pos[kLanes];
  for (int r = 0; r < kLanes; ++r) q_pos[r] = r < t.n_rows ? t.q_pos[r] : -1;
  const __m256i qp = _mm256_load_si256(reinterpret_cast<const __m256i*>(q_pos));
  const __m256i valid = _mm256_cmpgt_epi32(_mm256_set1_epi32(t.n_rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 tile_max = neg_inf;
  for (int j = 0; j < t.nk; ++j) {
    __m256 sv = _mm256_load_ps(s + j * kLanes);
    if (t.softcap > 0.0f) sv = softcap256(sv, t.softcap);
    __m256i visible = valid;
    if (!t.all_visible) visible = _mm256_and_si256(visible, visible_lanes(_mm256_set1_epi32(t.k_pos[j]), qp, t.window));
    sv = _mm256_blendv_ps(neg_inf, sv, _mm256_castsi256_ps(visible));
    _mm256_store_ps(s + j * kLanes, sv);
    tile_max = _mm256_max_ps(tile_max, sv);
  }

  const __m256 m_old = _mm256_loadu_ps(t.m);
  const __m256 m_new = _mm256_max_ps(m_old, tile_max);
  const __m256 alive = _mm256_and_ps(_mm256_cmp_ps(m_new, neg_inf, _CMP_NEQ_OQ), _mm256_castsi256_ps(valid));
  if (_mm256_movemask_ps(alive) == 0) return;  // no row has seen a key yet
  // Rows that have seen no key keep m = -inf; 0 in their place keeps -inf - -inf out of exp.
  const __m256 m_safe = _mm256_and_ps(m_new, alive);
  alignas(32) float correction[kLanes];
  const __m256 c = simd::exp256(_mm256_sub_ps(m_old, m_safe));  // 0 on the first visible tile
  _mm256_store_ps(correction, c);
  __m256 sum = _mm256_setzero_ps();
  for (int j = 0; j < t.nk; ++j) {
    const __m256 p = simd::exp256(_mm256_sub_ps(_mm256_load_ps(s + j * kLanes), m_safe));
    _mm256_store_ps(s + j * kLanes, p);
    sum = _mm256_add_ps(sum, p);
  }
  // Lanes past n_rows may be the next block's rows: only this block's lanes are written.
  _mm256_maskstore_ps(t.l, valid, _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(t.l), c), sum));
  _mm256_maskstore_ps(t.m, valid, m_new);

  rows_values<E>(t, s, kLanes, 1, correction, 0, t.n_rows);
}

// Scores of rows [r, r + R) against every key of the tile, keys in the lanes:
// s[(r + i) * kKeyTile + j]. Keys go N at a time (8 independent FMA chains for one row; for
// two rows, 4 keys x 2 rows share each key load), each key's sum reduced by hsum4 in
// groups of 4 keys; the last nk % 4 keys by hsum. A row's operations are the same whatever
// R and N, so its bits do not depend on the rows beside it.
template <class E, int R>
void row_scores(const TileRows& t, int r, float* s) {
  const int d = t.d, d8 = d / 8 * 8, nk = t.nk;
  const E* const* k = key_rows<E>(t);
  int j = 0;
  auto keys = [&]<int N>() {
    __m256 a[R][N];
    for (auto& row : a)
      for (__m256& v : row) v = _mm256_setzero_ps();
    for (int x = 0; x < d8; x += 8) {
      __m256 kv[N];
      for (int c = 0; c < N; ++c) {
        kv[c] = load8(k[j + c] + x);
        if constexpr (R > 1) asm("" : "+x"(kv[c]));  // one load per key, not one per row
      }
      for (int i = 0; i < R; ++i) {
        __m256 qv = _mm256_loadu_ps(t.q + (r + i) * d + x);
        if constexpr (R > 1) asm("" : "+x"(qv));  // one load per row, not one per key
        for (int c = 0; c < N; ++c) a[i][c] = _mm256_fmadd_ps(qv, kv[c], a[i][c]);
      }
    }
    for (int i = 0; i < R; ++i)
      for (int c = 0; c < N; c += 4)
        _mm_store_ps(s + (r + i) * kKeyTile + j + c, simd::hsum4(a[i][c], a[i][c + 1], a[i][c + 2], a[i][c + 3]));
    j += N;
  };
  if constexpr (R == 1)
    while (j + 8 <= nk) keys.template operator()<8>();
  while (j + 4 <= nk) keys.template operator()<4>();
  for (; j < nk; ++j)
    for (int i = 0; i < R; ++i) {
      __m256 a = _mm256_setzero_ps();
      for (int x = 0; x < d8; x += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(t.q + (r + i) * d + x), load8(k[j] + x), a);
      s[(r + i) * kKeyTile + j] = simd::hsum(a);
    }
  if (d8 < d)
    for (int i = 0; i < R; ++i)
      for (j = 0; j < nk; ++j)
        for (int x = d8; x < d; ++x) s[(r + i) * kKeyTile + j] += t.q[(r + i) * d + x] * elem(k[j], x);
}

// Row r's online softmax over its scores s (its row of the tile's), in place: soft-cap and
// mask eight keys at a time (keys past nk become -inf), then p = e^(s - m'); updates m and
// l, sets the correction e^(m - m') of its accumulator (0 on its first visible tile) and
// returns true. False, with nothing changed, while the row has seen no key.
inline bool row_softmax(const TileRows& t, int r, float* s, float& correction) {
  const int nk = t.nk;
  const float neg_inf_f = -std::numeric_limits<float>::infinity();
  const __m256 neg_inf = _mm256_set1_ps(neg_inf_f);
  const __m256i qp = _mm256_set1_epi32(t.q_pos[r]);
  __m256 tile_max = neg_inf;
  for (int j = 0; j < nk; j += 8) {
    const __m256i in_tile = simd::tail_mask(std::min(8, nk - j));
    __m256 sv = _mm256_load_ps(s + j);
    if (t.softcap > 0.0f) sv = softcap256(sv, t.softcap);
    __m256i visible = in_tile;
    if (!t.all_visible)
      visible = _mm256_and_si256(visible, visible_lanes(_mm256_maskload_epi32(t.k_pos + j, in_tile), qp, t.window));
    sv = _mm256_blendv_ps(neg_inf, sv, _mm256_castsi256_ps(visible));
    _mm256_store_ps(s + j, sv);
    tile_max = _mm256_max_ps(tile_max, sv);
  }
  const float m_new = std::max(t.m[r], simd::hmax(tile_max));
  if (m_new == neg_inf_f) return false;
  correction = _mm256_cvtss_f32(simd::exp256(_mm256_set1_ps(t.m[r] - m_new)));  // 0 on the first
  const __m256 mv = _mm256_set1_ps(m_new);
  __m256 sum = _mm256_setzero_ps();
  for (int j = 0; j < nk; j += 8) {  // masked keys and those past nk: exp(-inf) = 0
    const __m256 p = simd::exp256(_mm256_sub_ps(_mm256_load_ps(s + j), mv));
    _mm256_store_ps(s + j, p);
    sum = _mm256_add_ps(sum, p);
  }
  t.l[r] = t.l[r] * correction + simd::hsum(sum);
  t.m[r] = m_new;
  return true;
}

// Rows against the tile one at a time in their arithmetic, keys in the lanes: groups of
// fewer than kMinLaneGroup query heads per KV head would leave most lanes of tile_rows
// idle. Rows of the same KV head (a prefill's tokens) share the key and value loads: two
// rows' scores, four rows' P.V at a time.
template <class E>
void tile_row(const TileRows& t) {
  alignas(32) float s[kKeyTile * kLanes];
  int r = 0;
  for (; r + 2 <= t.n_rows; r += 2) row_scores<E, 2>(t, r, s);
  if (r < t.n_rows) row_scores<E, 1>(t, r, s);
  float correction[kLanes];
  bool live[kLanes];
  for (r = 0; r < t.n_rows; ++r) live[r] = row_softmax(t, r, s + r * kKeyTile, correction[r]);
  // P.V over each run of rows that have seen a key (the others stay as they are).
  for (r = 0; r < t.n_rows;) {
    int end = r;
    while (end < t.n_rows && live[end]) ++end;
    rows_values<E>(t, s, 1, kKeyTile, correction, r, end);
    r = end + 1;  // past the run and the dead row that ends it
  }
}

}  // namespace

const Kernels& avx2_kernels() {
  static const Kernels k{to_f32_rows, tile_rows<float>, tile_row<float>, tile_row<uint16_t>, tile_rows<uint16_t>};
  return k;
}

}  // namespace ember::attn
