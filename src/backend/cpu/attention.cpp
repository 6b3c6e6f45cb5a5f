// Causal attention over a KV ring, FlashAttention-style: for each KV head, a tile of query
// rows (the tokens of a query tile times the query heads that share this KV head, so GQA
// reads K/V once per group) walks the ring in tiles of kKeyTile keys, keeping a running max
// m, running sum l and unnormalised output acc per row (online softmax):
//   m' = max(m, max_j s_j);  acc = acc * e^(m - m') + sum_j e^(s_j - m') v_j;  l likewise
// so no score matrix larger than rows x kKeyTile ever exists. K and V tiles are decoded from
// the cache type into a small f32 buffer (f32 caches, and f16 ones where choose_kernel says
// so, are read in place), and the rows go through each tile in blocks of eight that share a
// KV head, as the lanes of a vector, or each in its own arithmetic (keys in the lanes) when
// fewer than four query heads share a KV head (attention_kernels.h): either way a row's
// bits never depend on the other rows of the batch.
//
// Work items are (KV heads, query tile, key split). Prefill takes one KV head per item, so its
// many query rows share each decoded tile. Decode (one query tile) takes several KV heads per
// item (whole cache rows where the kernel reads them in place, else up to kMaxRunElements of
// each): a cache row holds every head side by side, and reading long runs reads the ring
// nearly sequentially, where per-head items would read it in head_dim-sized strides
// (measured ~2x more CPU time at depth 2048); each tile asks for the next tile's rows before
// it computes.
//
// Keys are walked in splits of kSplitTiles tiles, always the same ones: each split runs its
// own online softmax and the splits' (m, l, acc) are folded in order (fold_split), so a
// row's bits follow from its position and the cache alone, whatever else is in the call (a
// verify batch, a prefill chunk of any length, other sequences' chunks in other calls). When
// heads x query tiles leave threads idle (decode), the splits become items of their own
// (flash-decoding) and a final pass folds their partials; otherwise an item folds its splits
// as it goes. Key tiles whose positions cannot be visible to any query of the tile (future
// keys in prefill, keys behind the window, empty slots) are skipped; tiles visible to every
// query skip the per-element mask. Paged caches (KVView::blocks) place every tile inside one
// block, so a tile's rows stay contiguous.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

#include "backend/cpu/attention_kernels.h"
#include "backend/kv_types.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/op_checks.h"
#include "util/thread_pool.h"

namespace ember {
namespace attn {

void check_args(const MatView& q, const int32_t* q_pos, const KVView& kv, const AttentionParams& p,
                const F32Mat& out) {
  const char* op = "attention";
  if (p.n_head <= 0 || p.n_head_kv <= 0 || p.head_dim <= 0 || p.n_head % p.n_head_kv != 0)
    fail(ErrorKind::InvalidArgument, "attention: {} query heads cannot share {} KV heads (head_dim {})", p.n_head,
         p.n_head_kv, p.head_dim);
  if (p.window < 0 || p.softcap < 0.0f)
    fail(ErrorKind::InvalidArgument, "attention: window {} and softcap {} must not be negative", p.window,
         p.softcap);
  ops::detail::require_f32(q, op, "q");
  ops::detail::require_valid(out, op, "out");
  const int64_t q_cols = static_cast<int64_t>(p.n_head) * p.head_dim;
  ops::detail::require_shape(q.rows, q.cols, q.rows, q_cols, op, "q");
  ops::detail::require_shape(out.rows, out.cols, q.rows, q_cols, op, "out");
  if (q.rows > 0 && q_pos == nullptr) fail(ErrorKind::InvalidArgument, "attention: query positions missing");
  const int64_t kv_cols = static_cast<int64_t>(p.n_head_kv) * p.head_dim;
  for (auto [type, row_bytes, data, name] : {std::tuple{kv.k_type, kv.k_row_bytes, kv.k, "K"},
                                             std::tuple{kv.v_type, kv.v_row_bytes, kv.v, "V"}}) {
    if (!kv_type_known(type))
      fail(ErrorKind::InvalidArgument, "attention: {} cache type {} is not one of {}", name, dtype_name(type),
           kv_type_names());
    if (kv_cols % dtype_size(type).block_size != 0)
      fail(ErrorKind::InvalidArgument, "attention: {} row of {} elements is not whole {} blocks", name, kv_cols,
           dtype_name(type));
    if (row_bytes < dtype_row_bytes(type, kv_cols))
      fail(ErrorKind::InvalidArgument, "attention: {} row stride {} bytes is below the {} a row needs", name,
           row_bytes, dtype_row_bytes(type, kv_cols));
    if (kv.n_slots > 0 && data == nullptr) fail(ErrorKind::InvalidArgument, "attention: {} cache has no data", name);
  }
  if (kv.n_slots < 0 || (kv.n_slots > 0 && kv.slot_pos == nullptr))
    fail(ErrorKind::InvalidArgument, "attention: {} slots without slot positions", kv.n_slots);
  if (kv.blocks && (kv.block_size <= 0 || kv.block_size % kKeyTile != 0 || kv.n_slots % kv.block_size != 0))
    fail(ErrorKind::InvalidArgument, "attention: {} paged slots in blocks of {} (blocks must be whole key tiles of {})",
         kv.n_slots, kv.block_size, kKeyTile);
  if (kv.first_slot < 0 || kv.first_slot % kKeyTile != 0)
    fail(ErrorKind::InvalidArgument, "attention: first slot {} is not on a key tile boundary", kv.first_slot);
}

}  // namespace attn

namespace ops {
namespace {

using attn::kKeyTile;
using attn::kLanes;
// Query rows per work item (tokens x heads of a group): each decoded K/V tile serves this
// many rows. 64 against 32, prefill of 512 tokens at depth 2048 (2 alternated runs):
// TinyLlama's 32:4 x 64 heads 91-93 -> 99 GFLOP/s, Llama 3's 32:8 x 128 94-95 -> 100-103.
constexpr int kQueryRows = 64;
constexpr int kSplitTiles = 4;         // key tiles per split (fixed: see the header)
constexpr int kMaxRunElements = 1024;  // K/V elements decoded per row per item: 128 KiB tiles (L2)

// Positions held by one key tile, to skip tiles no query of a query tile can see.
struct KeyTileSpan {
  int32_t min_pos = std::numeric_limits<int32_t>::max();
  int32_t max_pos = -1;  // -1: the tile holds no key
  bool all_filled = true;
};

struct Plan {
  const MatView* q;
  const int32_t* q_pos;
  const KVView* kv;
  const AttentionParams* p;
  const attn::Kernels* kern;
  F32Mat out;
  void (*tile)(const attn::TileRows& t);  // the kernel every block of rows goes through
  bool f16_in_place;  // it reads f16 K/V rows in the cache (TileRows::k16, v16), not a decoded tile
  bool stream_tiles;  // and decode's items take whole rows, each tile read through front to back first (stream_tile)
  int group;          // query heads per KV head
  int heads_kv;       // KV heads per item (1 for prefill; for decode whole rows, fewer for a short ring or to fit L2)
  int tokens;         // tokens per query tile
  int64_t n_qtiles;
  int64_t tile_origin;  // the sequence's tile number of the view's tile 0 (KVView::first_slot)
  int splits;         // key splits: split s covers the sequence's tiles [s0 + s, s0 + s + 1) * kSplitTiles
  bool split_items;   // each split is an item of its own, leaving partials (else an item folds them all)
  std::vector<KeyTileSpan> spans;  // every key tile of the cache
  int64_t extent;                  // tiles [0, extent) hold every key the cache has
  float* partial = nullptr;        // split_items: per (split, token, head): m, l, acc[head_dim]

  int64_t items() const {
    return static_cast<int64_t>(p->n_head_kv / heads_kv) * n_qtiles * (split_items ? splits : 1);
  }
  size_t partial_stride() const { return static_cast<size_t>(p->head_dim) + 2; }
  float* partial_at(int split, int64_t t, int h) {
    return partial + ((static_cast<size_t>(split) * q->rows + t) * p->n_head + h) * partial_stride();
  }
};

// Folds one split's running max m, sum l and unnormalised output a into a row's total (M, L,
// A), as the online softmax folds a tile: M' = max(M, m), A = A e^(M - M') + a e^(m - M').
// A split with no visible key (l == 0) changes nothing; the first one is taken exactly
// (e^-inf = 0). Out of line so that both callers (the in-item fold and the merge of split
// items) round alike.
[[gnu::noinline]] void fold_split(float& M, float& L, float* A, float m, float l, const float* a, int d) {
  if (l == 0.0f) return;
  const float M2 = std::max(M, m);
  const float sa = std::exp(M - M2), sb = std::exp(m - M2);
  for (int x = 0; x < d; ++x) A[x] = A[x] * sa + a[x] * sb;
  L = L * sa + l * sb;
  M = M2;
}

// dst = A / L, or zeros when the row saw no key. A sink (a logit with no value, null for
// none) is folded in first as one more split: M' = max(M, sink), A and L scaled by
// e^(M - M'), L += e^(sink - M'). Once per row, after every split, so a row's bits still
// follow from its position and the cache alone.
void normalise(float* dst, const float* A, float M, float L, const float* sink, int d) {
  float a_scale = 1.0f;
  if (sink && L > 0.0f) {
    const float M2 = std::max(M, *sink);
    a_scale = std::exp(M - M2);
    L = L * a_scale + std::exp(*sink - M2);
  }
  const float inv = L > 0.0f ? a_scale / L : 0.0f;
  for (int x = 0; x < d; ++x) dst[x] = A[x] * inv;
}

const float* sink_of(const AttentionParams& p, int h) { return p.sinks ? p.sinks + h : nullptr; }

// Per-thread buffers, reused across calls (the pool's threads are persistent). The row
// buffers have kLanes rows to spare, as a block of rows reads kLanes rows of q and kLanes
// entries of m and l even when fewer rows are left.
struct Scratch {
  std::vector<float> q, k, v, acc, m, l, segment;
  std::vector<float> total_acc, total_m, total_l;  // the folded splits of each row
  std::vector<int32_t> q_pos;
  std::vector<const float*> k_rows, v_rows;  // head-major: [KV head][key of the tile]
  std::vector<const uint16_t*> k16_rows, v16_rows;  // the same, f16 rows in the cache (f16_in_place)
  void reserve(int rows, int d, int heads_kv, int decoded_heads, int block) {
    auto grow = [](auto& b, size_t n) {
      if (b.size() < n) b.resize(n);
    };
    grow(q, static_cast<size_t>(rows + kLanes) * d);
    grow(acc, static_cast<size_t>(rows) * d);
    grow(total_acc, static_cast<size_t>(rows) * d);
    grow(total_m, static_cast<size_t>(rows));
    grow(total_l, static_cast<size_t>(rows));
    grow(k, static_cast<size_t>(kKeyTile) * decoded_heads * d);
    grow(v, static_cast<size_t>(kKeyTile) * decoded_heads * d);
    grow(m, static_cast<size_t>(rows + kLanes));
    grow(l, static_cast<size_t>(rows + kLanes));
    grow(q_pos, static_cast<size_t>(rows));
    grow(segment, static_cast<size_t>(d) + 2 * block);
    grow(k_rows, static_cast<size_t>(kKeyTile) * heads_kv);
    grow(v_rows, static_cast<size_t>(kKeyTile) * heads_kv);
    grow(k16_rows, static_cast<size_t>(kKeyTile) * heads_kv);
    grow(v16_rows, static_cast<size_t>(kKeyTile) * heads_kv);
  }
};

// Keys [0, nk) of a tile (cache rows `row_bytes` apart from `rows`), KV heads [g0, g0 +
// heads) of each, as f32 rows of d: out[gi * kKeyTile + j] is head g0 + gi of key j (in
// place for f32 caches). Each cache row is read once, front to back (the ring is cold in
// decode, and strided reads of it stall on memory), but the f32 copies are head-major (buf
// holds heads x kKeyTile rows of d), so a head's scores and P.V read one contiguous block:
// rows a whole cache row apart (1 KiB for 4 heads of 64) would fall into a few L1 sets and
// evict each other. A head that does not start and end on block boundaries (head_dim 16
// with q8_0) decodes its covering blocks into `segment` and copies its part.
void decode_tile(const attn::Kernels& kern, DType type, const uint8_t* rows, size_t row_bytes, int nk, int64_t begin,
                 int heads, int d, float* buf, float* segment, const float** out) {
  const int64_t bs = dtype_size(type).block_size;
  const size_t head_stride = static_cast<size_t>(kKeyTile) * d;
  if (type == DType::F32) {
    for (int gi = 0; gi < heads; ++gi)
      for (int j = 0; j < nk; ++j)
        out[gi * kKeyTile + j] = reinterpret_cast<const float*>(rows + j * row_bytes) + begin + gi * d;
    return;
  }
  if (begin % bs == 0 && d % bs == 0) {
    kern.to_f32_rows(type, rows + dtype_row_bytes(type, begin), row_bytes, nk, heads, d, buf, head_stride);
  } else {
    for (int gi = 0; gi < heads; ++gi) {
      const int64_t head_begin = begin + static_cast<int64_t>(gi) * d;
      const int64_t first = head_begin / bs * bs;
      const int64_t last = (head_begin + d + bs - 1) / bs * bs;
      for (int j = 0; j < nk; ++j) {
        kern.to_f32_rows(type, rows + j * row_bytes + dtype_row_bytes(type, first), 0, 1, 1, last - first, segment, 0);
        std::memcpy(buf + gi * head_stride + static_cast<size_t>(j) * d, segment + (head_begin - first),
                    static_cast<size_t>(d) * sizeof(float));
      }
    }
  }
  for (int gi = 0; gi < heads; ++gi)
    for (int j = 0; j < nk; ++j) out[gi * kKeyTile + j] = buf + gi * head_stride + static_cast<size_t>(j) * d;
}

// The bytes of each K and V cache row that hold elements [begin, begin + n) (whole blocks
// of a quantised type): rows row_bytes apart from base, bytes [first, last) of each.
struct RowBytes {
  const uint8_t* base;
  size_t row_bytes, first, last;
};
std::array<RowBytes, 2> run_bytes(const KVView& kv, int64_t begin, int64_t n) {
  auto side = [&](const void* base, size_t row_bytes, DType type) {
    const int64_t bs = dtype_size(type).block_size;
    return RowBytes{static_cast<const uint8_t*>(base), row_bytes, dtype_row_bytes(type, begin / bs * bs),
                    dtype_row_bytes(type, (begin + n + bs - 1) / bs * bs)};
  };
  return {side(kv.k, kv.k_row_bytes, kv.k_type), side(kv.v, kv.v_row_bytes, kv.v_type)};
}

// Asks for the K and V bytes of a tile's keys that an item reads ([begin, begin + n)
// elements of each row), so the next tile streams in while this one computes: decode reads
// the ring cold (the weights went through the caches since the last token), and the
// hardware prefetchers see only short strided runs.
void prefetch_tile(const KVView& kv, int64_t row0, int nk, int64_t begin, int64_t n) {
  for (const RowBytes& r : run_bytes(kv, begin, n))
    for (int j = 0; j < nk; ++j)
      for (size_t off = r.first; off < r.last; off += 64)
        __builtin_prefetch(r.base + (row0 + j) * r.row_bytes + off, 0, 3);
}

// Reads the same bytes of a tile front to back, one load per cache line, so that they
// stream into the caches at the memory's pace before a kernel reads them in its own order.
// A demand read: the prefetch instructions of prefetch_tile did not bring the same gain
// (README, "Attention at depth").
void stream_tile(const KVView& kv, int64_t row0, int nk, int64_t begin, int64_t n) {
  uint64_t sum = 0;
  for (const RowBytes& r : run_bytes(kv, begin, n))
    for (int j = 0; j < nk; ++j) {
      const uint8_t* row = r.base + (row0 + j) * r.row_bytes;
      for (size_t off = r.first; off < r.last; off += 64) sum += row[off];
      sum += row[r.last - 1];  // the last line, where the run does not start on a line
    }
  asm volatile("" : : "r"(sum));  // keeps the loads
}

// For decode: the most KV heads (a divisor of n_head_kv) whose run of a cache row stays
// within kMaxRunElements, so the decoded K and V tiles stay in L2.
int heads_per_item(int n_head_kv, int head_dim) {
  int h = n_head_kv;
  while (h > 1 && (static_cast<int64_t>(h) * head_dim > kMaxRunElements || n_head_kv % h != 0)) --h;
  return h;
}

// One work item (see the top of this file): its rows' queries, its key tiles split by split,
// then its rows' outputs, or its split's partials. Rows are KV-head major so that each KV
// head's rows form one block of nt * group: row r = (gi * nt + ti) * group + hi is token
// t0 + ti, query head (g0 + gi) * group + hi.
class ItemRun {
 public:
  ItemRun(Plan& plan, int64_t item, Scratch& sc)
      : plan_(plan), p_(*plan.p), kv_(*plan.kv), kern_(*plan.kern), sc_(sc), d_(p_.head_dim) {
    const int64_t per_split = plan.split_items ? plan.splits : 1;
    split_first_ = plan.split_items ? static_cast<int>(item % plan.splits) : 0;
    split_last_ = plan.split_items ? split_first_ + 1 : plan.splits;
    const int64_t qtile = item / per_split % plan.n_qtiles;
    g0_ = static_cast<int>(item / per_split / plan.n_qtiles) * plan.heads_kv;  // first KV head
    t0_ = qtile * plan.tokens;
    nt_ = static_cast<int>(std::min<int64_t>(plan.tokens, plan.q->rows - t0_));
    rows_per_kv_ = nt_ * plan.group;
    rows_ = rows_per_kv_ * plan.heads_kv;
    head_begin_ = static_cast<int64_t>(g0_) * d_;
    run_ = static_cast<int64_t>(plan.heads_kv) * d_;  // elements of each row this item reads
    tr_.d = d_;  // the fields every tile and block share; compute_tile sets the rest
    tr_.window = p_.window;
    tr_.softcap = p_.softcap;
    sc.reserve(rows_, d_, plan.heads_kv, plan.f16_in_place ? 0 : plan.heads_kv, QK8_0);
  }

  void run() {
    load_queries();
    // Split boundaries fall on the sequence's tile numbers, not the view's (tile_origin).
    const int64_t s0 = plan_.tile_origin / kSplitTiles;
    const int64_t tile_begin = std::max<int64_t>(0, (s0 + split_first_) * kSplitTiles - plan_.tile_origin);
    const int64_t tile_end = std::min(plan_.extent, (s0 + split_last_) * kSplitTiles - plan_.tile_origin);
    if (tile_begin < tile_end && wanted(tile_begin)) prefetch(tile_begin);
    reset_split();
    for (int64_t kt = tile_begin; kt < tile_end; ++kt) {
      if (kt > tile_begin && (kt + plan_.tile_origin) % kSplitTiles == 0) {  // a split ends: fold it, start the next
        fold_rows();
        reset_split();
      }
      if (!wanted(kt)) continue;
      if (kt + 1 < tile_end && wanted(kt + 1)) prefetch(kt + 1);
      compute_tile(kt);
    }
    finish_rows();
  }

 private:
  int64_t token_of(int r) const { return t0_ + r / plan_.group % nt_; }
  int head_of(int r) const { return (g0_ + r / rows_per_kv_) * plan_.group + r % plan_.group; }
  int tile_keys(int64_t kt) const {
    return static_cast<int>(std::min<int64_t>(kKeyTile, kv_.n_slots - kt * kKeyTile));
  }
  int64_t tile_row(int64_t kt) const { return kv_.row_of(kt * kKeyTile); }  // a tile never straddles blocks
  void prefetch(int64_t kt) const { prefetch_tile(kv_, tile_row(kt), tile_keys(kt), head_begin_, run_); }
  // Pointers to the f16 rows of the tile's keys [row0, row0 + nk) in the cache, head-major as
  // decode_tile's.
  void f16_rows(const void* cache, size_t row_bytes, int64_t row0, int nk, const uint16_t** out) const {
    const auto* base = static_cast<const uint8_t*>(cache) + row0 * row_bytes;
    for (int gi = 0; gi < plan_.heads_kv; ++gi)
      for (int j = 0; j < nk; ++j)
        out[gi * kKeyTile + j] = reinterpret_cast<const uint16_t*>(base + j * row_bytes) + head_begin_ + gi * d_;
  }
  bool wanted(int64_t kt) const {
    const KeyTileSpan& span = plan_.spans[kt];
    if (span.max_pos < 0 || span.min_pos > q_max_) return false;
    return p_.window <= 0 || static_cast<int64_t>(q_min_) - span.max_pos < p_.window;
  }

  // The rows' queries, scaled, with their positions; every row's totals emptied.
  void load_queries() {
    q_min_ = std::numeric_limits<int32_t>::max();
    q_max_ = std::numeric_limits<int32_t>::min();
    for (int r = 0; r < rows_; ++r) {
      const int64_t t = token_of(r);
      const int h = head_of(r);
      const float* src = reinterpret_cast<const float*>(plan_.q->row(t)) + static_cast<int64_t>(h) * d_;
      for (int x = 0; x < d_; ++x) sc_.q[static_cast<size_t>(r) * d_ + x] = src[x] * p_.scale;
      sc_.q_pos[r] = plan_.q_pos[t];
      q_min_ = std::min(q_min_, plan_.q_pos[t]);
      q_max_ = std::max(q_max_, plan_.q_pos[t]);
    }
    std::fill_n(sc_.total_acc.begin(), static_cast<size_t>(rows_) * d_, 0.0f);
    std::fill_n(sc_.total_m.begin(), rows_, -std::numeric_limits<float>::infinity());
    std::fill_n(sc_.total_l.begin(), rows_, 0.0f);
  }

  void reset_split() {
    std::fill_n(sc_.acc.begin(), static_cast<size_t>(rows_) * d_, 0.0f);
    std::fill_n(sc_.m.begin(), rows_ + kLanes, -std::numeric_limits<float>::infinity());
    std::fill_n(sc_.l.begin(), rows_ + kLanes, 0.0f);
  }

  void fold_rows() {
    for (int r = 0; r < rows_; ++r)
      fold_split(sc_.total_m[r], sc_.total_l[r], sc_.total_acc.data() + static_cast<size_t>(r) * d_, sc_.m[r],
                 sc_.l[r], sc_.acc.data() + static_cast<size_t>(r) * d_, d_);
  }

  // Key tile kt decoded to f32, then every block of rows of each KV head through it.
  void compute_tile(int64_t kt) {
    const KeyTileSpan& span = plan_.spans[kt];
    const int64_t row0 = tile_row(kt);
    const int nk = tile_keys(kt);
    if (plan_.f16_in_place) {
      if (plan_.stream_tiles) stream_tile(kv_, row0, nk, head_begin_, run_);
      f16_rows(kv_.k, kv_.k_row_bytes, row0, nk, sc_.k16_rows.data());
      f16_rows(kv_.v, kv_.v_row_bytes, row0, nk, sc_.v16_rows.data());
    } else {
      decode_tile(kern_, kv_.k_type, static_cast<const uint8_t*>(kv_.k) + row0 * kv_.k_row_bytes, kv_.k_row_bytes,
                  nk, head_begin_, plan_.heads_kv, d_, sc_.k.data(), sc_.segment.data(), sc_.k_rows.data());
      decode_tile(kern_, kv_.v_type, static_cast<const uint8_t*>(kv_.v) + row0 * kv_.v_row_bytes, kv_.v_row_bytes,
                  nk, head_begin_, plan_.heads_kv, d_, sc_.v.data(), sc_.segment.data(), sc_.v_rows.data());
    }
    tr_.k_pos = kv_.slot_pos + row0;
    tr_.nk = nk;
    tr_.all_visible = span.all_filled && span.max_pos <= q_min_ &&
                      (p_.window <= 0 || static_cast<int64_t>(q_max_) - span.min_pos < p_.window);
    for (int gi = 0; gi < plan_.heads_kv; ++gi) {
      tr_.k = sc_.k_rows.data() + gi * kKeyTile;
      tr_.v = sc_.v_rows.data() + gi * kKeyTile;
      tr_.k16 = sc_.k16_rows.data() + gi * kKeyTile;
      tr_.v16 = sc_.v16_rows.data() + gi * kKeyTile;
      for (int b = 0; b < rows_per_kv_; b += kLanes) {
        const int r0 = gi * rows_per_kv_ + b;
        tr_.q = sc_.q.data() + static_cast<size_t>(r0) * d_;
        tr_.q_pos = sc_.q_pos.data() + r0;
        tr_.n_rows = std::min(kLanes, rows_per_kv_ - b);
        tr_.m = sc_.m.data() + r0;
        tr_.l = sc_.l.data() + r0;
        tr_.acc = sc_.acc.data() + static_cast<size_t>(r0) * d_;
        plan_.tile(tr_);
      }
    }
  }

  // The last split's rows: its partials (split items), or folded into the totals and written.
  void finish_rows() {
    for (int r = 0; r < rows_; ++r) {
      const int64_t t = token_of(r);
      const int h = head_of(r);
      const float* a = sc_.acc.data() + static_cast<size_t>(r) * d_;
      if (plan_.split_items) {
        float* part = plan_.partial_at(split_first_, t, h);
        part[0] = sc_.m[r];
        part[1] = sc_.l[r];
        std::memcpy(part + 2, a, static_cast<size_t>(d_) * sizeof(float));
      } else {
        float* A = sc_.total_acc.data() + static_cast<size_t>(r) * d_;
        fold_split(sc_.total_m[r], sc_.total_l[r], A, sc_.m[r], sc_.l[r], a, d_);
        normalise(plan_.out.row(t) + static_cast<int64_t>(h) * d_, A, sc_.total_m[r], sc_.total_l[r],
                  sink_of(p_, h), d_);
      }
    }
  }

  Plan& plan_;
  const AttentionParams& p_;
  const KVView& kv_;
  const attn::Kernels& kern_;
  Scratch& sc_;
  const int d_;
  int split_first_, split_last_;
  int g0_;  // the item's first KV head
  int64_t t0_;  // its first token
  int nt_;
  int rows_per_kv_, rows_;
  int32_t q_min_ = 0, q_max_ = 0;  // of its tokens' positions
  int64_t head_begin_, run_;      // the run of each cache row it reads: first element, length
  attn::TileRows tr_{};
};

void run_item(Plan& plan, int64_t item, Scratch& sc) { ItemRun(plan, item, sc).run(); }

// out = the splits' partials folded in split order (fold_split), then normalised.
void merge_splits(ThreadPool& pool, Plan& plan) {
  const int d = plan.p->head_dim;
  const int64_t n = plan.q->rows * plan.p->n_head;
  pool.parallel_for(n, 16, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> A;
    A.resize(static_cast<size_t>(d));
    for (int64_t i = begin; i < end; ++i) {
      const int64_t t = i / plan.p->n_head;
      const int h = static_cast<int>(i % plan.p->n_head);
      float M = -std::numeric_limits<float>::infinity(), L = 0.0f;
      std::fill(A.begin(), A.end(), 0.0f);
      for (int s = 0; s < plan.splits; ++s) {
        const float* part = plan.partial_at(s, t, h);
        fold_split(M, L, A.data(), part[0], part[1], part + 2, d);
      }
      normalise(plan.out.row(t) + static_cast<int64_t>(h) * d, A.data(), M, L, sink_of(*plan.p, h), d);
    }
  });
}

// The kernel for the call's blocks of rows, and whether it reads f16 K/V in place (the
// values, and so the bits, are the same either way):
// - Rows as the lanes of a block when at least kMinLaneGroup query heads share a KV head,
//   else each row in its own arithmetic, keys in the lanes; either takes blocks of up to
//   kLanes rows of one KV head.
// - f16 K and V are read in place, converted as they are loaded, where the level has the
//   kernel: always for rows in their own arithmetic (each element converted once per row in
//   decode, where decoding the tile first only adds a copy; once per two or four rows in
//   prefill, measured as fast as the decoded tile for MHA 16:16 x 128); for lanes when a
//   KV head has one block of rows (decode: each element converted once or twice where the
//   copy converts, stores and reloads it). Many rows in lanes reuse the decoded tile.
// - Kernels read a tile head by head, a cache row apart, which streams from memory badly:
//   where a KV head has one block of rows (decode) and they read in place, items take whole
//   rows (Plan::heads_kv) and read each tile's rows through front to back first
//   (stream_tile). At depth 2048 on Zen 3 that is 1.1-1.2x the copy for TinyLlama's and
//   Llama 3's heads and 1.3x reading in place head by head for MHA (README, "Attention at
//   depth").
void choose_kernel(Plan& plan, const KVView& kv) {
  const bool lanes = plan.group >= attn::kMinLaneGroup;
  const attn::Kernels& k = *plan.kern;
  const bool f16 = kv.k_type == DType::F16 && kv.v_type == DType::F16;
  const bool one_block = std::min<int64_t>(plan.tokens, plan.q->rows) * plan.group <= kLanes;  // per KV head
  plan.f16_in_place = f16 && (lanes ? one_block && k.tile_rows_f16 : k.tile_row_f16 != nullptr);
  plan.stream_tiles = plan.f16_in_place && one_block;
  if (plan.f16_in_place) plan.tile = lanes ? k.tile_rows_f16 : k.tile_row_f16;
  else plan.tile = lanes ? k.tile_rows : k.tile_row;
}

}  // namespace

void attention(ThreadPool& pool, const MatView& q, const int32_t* q_pos, const KVView& kv, const AttentionParams& p,
               F32Mat out) {
  attn::check_args(q, q_pos, kv, p, out);
  if (q.rows == 0) return;
  Plan plan{};
  plan.q = &q;
  plan.q_pos = q_pos;
  plan.kv = &kv;
  plan.p = &p;
  plan.kern = simd_level() >= SimdLevel::AVX2 ? &attn::avx2_kernels() : &attn::scalar_kernels();
  plan.out = out;
  plan.group = p.n_head / p.n_head_kv;
  plan.tokens = static_cast<int>(std::clamp<int64_t>(kQueryRows / plan.group, 1, q.rows));
  plan.n_qtiles = (q.rows + plan.tokens - 1) / plan.tokens;
  choose_kernel(plan, kv);
  // Decode's items take whole cache rows where they stream them, else as many heads as keep
  // the decoded tiles (or, in place, the rows' accumulators) in L2.
  plan.heads_kv = plan.n_qtiles > 1  ? 1
                  : plan.stream_tiles ? p.n_head_kv
                                      : heads_per_item(p.n_head_kv, p.head_dim);
  plan.spans.resize(static_cast<size_t>((kv.n_slots + kKeyTile - 1) / kKeyTile));
  plan.extent = 0;
  for (int64_t kt = 0; kt < static_cast<int64_t>(plan.spans.size()); ++kt) {
    KeyTileSpan& span = plan.spans[kt];
    const int32_t* pos = kv.slot_pos + kv.row_of(kt * kKeyTile);  // a tile's rows are contiguous
    const int64_t nk = std::min<int64_t>(kKeyTile, kv.n_slots - kt * kKeyTile);
    for (int64_t j = 0; j < nk; ++j) {
      if (pos[j] < 0) {
        span.all_filled = false;
        continue;
      }
      span.min_pos = std::min(span.min_pos, pos[j]);
      span.max_pos = std::max(span.max_pos, pos[j]);
      plan.extent = kt + 1;
    }
  }
  plan.tile_origin = kv.first_slot / kKeyTile;
  const int64_t s0 = plan.tile_origin / kSplitTiles, s_end = (plan.tile_origin + plan.extent + kSplitTiles - 1) / kSplitTiles;
  plan.splits = static_cast<int>(std::max<int64_t>(1, s_end - s0));

  // Enough items to keep every thread busy: when heads x query tiles are few, each split
  // becomes an item (the rows' bits are the same either way, see fold_split).
  const int64_t base_items = static_cast<int64_t>(p.n_head_kv / plan.heads_kv) * plan.n_qtiles;
  const int64_t want_items = pool.size() > 1 ? 4 * static_cast<int64_t>(pool.size()) : 1;
  plan.split_items = base_items < want_items && plan.splits > 1;
  // A cache too short to split among the threads: give them KV heads instead (a short cache
  // is cache-resident, so the strided reads this costs at depth do not matter here).
  while (plan.items() < pool.size() && plan.heads_kv > 1) {
    int h = plan.heads_kv - 1;
    while (p.n_head_kv % h != 0) --h;
    plan.heads_kv = h;
  }
  thread_local std::vector<float> partial;  // reused: decode calls this once per layer per token
  if (plan.split_items) {
    partial.resize(static_cast<size_t>(plan.splits) * q.rows * p.n_head * plan.partial_stride());
    plan.partial = partial.data();
  }

  pool.for_each_index(plan.items(), [&](int64_t item) {
    thread_local Scratch scratch;
    run_item(plan, item, scratch);
  });
  if (plan.split_items) merge_splits(pool, plan);
}

}  // namespace ops
}  // namespace ember
