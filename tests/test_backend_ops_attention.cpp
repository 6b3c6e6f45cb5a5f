// Attention against two oracles: the reference loop (ops::reference::attention) and a naive
// softmax(Q K^T * scale) V written below that materialises the full score matrix, over every
// KV cache type, GQA / MQA / MHA, sliding window, logit soft-cap, unsorted rings with empty
// slots, decode (1 query) and prefill (many), at every SIMD level with 1 and 3 threads.
#include <doctest/doctest.h>

#include <cstring>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cpu/ops_reference.h"
#include "util/thread_pool.h"
#include "backend/kv_types.h"
#include "backend/ops.h"
#include "backend_check.h"
#include "tensor/quant.h"
#include "util/error.h"

using namespace ember;

namespace {

// Both oracles and the tiled op read the same decoded K/V, so they differ only by f32
// rounding and the vector exp: far inside the 5e-4 the contract allows for attention.
constexpr double kAttentionNmse = 1e-6;

// A KV ring of n_slots rows: `filled` tokens at positions first_pos.. placed in shuffled
// slots, the other slots empty (-1). Rows are padded beyond what the type needs, as a
// cache with aligned rows would be.
struct Ring {
  DType k_type, v_type;
  int n_head_kv, head_dim;
  size_t k_row_bytes, v_row_bytes;
  std::vector<uint8_t> k, v;
  std::vector<int32_t> pos;

  Ring(check::Rng& rng, DType kt, DType vt, int n_head_kv_, int head_dim_, int64_t n_slots, int64_t filled,
       int32_t first_pos)
      : k_type(kt), v_type(vt), n_head_kv(n_head_kv_), head_dim(head_dim_) {
    const int64_t row = static_cast<int64_t>(n_head_kv) * head_dim;
    k_row_bytes = dtype_row_bytes(kt, row) + 16;
    v_row_bytes = dtype_row_bytes(vt, row) + 8;
    k.assign(static_cast<size_t>(n_slots) * k_row_bytes, 0xEE);
    v.assign(static_cast<size_t>(n_slots) * v_row_bytes, 0xEE);
    pos.assign(static_cast<size_t>(n_slots), -1);
    std::vector<int64_t> slots(static_cast<size_t>(n_slots));
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng.engine());
    for (int64_t i = 0; i < filled; ++i) {
      const int64_t slot = slots[static_cast<size_t>(i)];
      pos[static_cast<size_t>(slot)] = first_pos + static_cast<int32_t>(i);
      const auto kr = rng.uniform(static_cast<size_t>(row));
      const auto vr = rng.uniform(static_cast<size_t>(row), -2.0f, 2.0f);
      ops::store_row(kr.data(), row, kt, k.data() + slot * k_row_bytes);
      ops::store_row(vr.data(), row, vt, v.data() + slot * v_row_bytes);
    }
  }
  KVView view() const {
    return KVView{k_type, v_type, k.data(), v.data(), k_row_bytes, v_row_bytes, pos.data(),
                  static_cast<int64_t>(pos.size())};
  }
  // All rows decoded to f32 (n_slots x n_head_kv * head_dim).
  std::vector<float> decoded(bool values) const {
    const int64_t row = static_cast<int64_t>(n_head_kv) * head_dim;
    std::vector<float> out(pos.size() * static_cast<size_t>(row));
    for (size_t j = 0; j < pos.size(); ++j)
      dequantize_row(values ? v_type : k_type, (values ? v.data() + j * v_row_bytes : k.data() + j * k_row_bytes),
                     out.data() + j * row, row);
    return out;
  }
};

// The textbook formula, one head at a time, with the whole n_q x n_slots score matrix:
//   S = Q_h K_g^T * scale; S = c tanh(S / c); S[masked] = -inf; O_h = softmax(S) V_g
// With sinks, a column of sinks[h] joins S for the softmax and is dropped before V.
std::vector<float> naive_attention(const std::vector<float>& q, const std::vector<int32_t>& q_pos, const Ring& ring,
                                   const AttentionParams& p) {
  const int64_t n_q = static_cast<int64_t>(q_pos.size());
  const int64_t n_kv = static_cast<int64_t>(ring.pos.size());
  const int d = p.head_dim;
  const int64_t kv_row = static_cast<int64_t>(p.n_head_kv) * d;
  const auto K = ring.decoded(false), V = ring.decoded(true);
  std::vector<float> out(static_cast<size_t>(n_q * p.n_head * d), 0.0f);
  std::vector<double> S(static_cast<size_t>(n_q * n_kv));
  for (int h = 0; h < p.n_head; ++h) {
    const int g = h / (p.n_head / p.n_head_kv);
    for (int64_t i = 0; i < n_q; ++i)
      for (int64_t j = 0; j < n_kv; ++j) {
        double s = 0.0;
        for (int x = 0; x < d; ++x) s += static_cast<double>(q[(i * p.n_head + h) * d + x]) * K[j * kv_row + g * d + x];
        s *= p.scale;
        if (p.softcap > 0) s = p.softcap * std::tanh(s / p.softcap);
        const int32_t kp = ring.pos[static_cast<size_t>(j)], qp = q_pos[static_cast<size_t>(i)];
        const bool masked = kp < 0 || kp > qp || (p.window > 0 && qp - kp >= p.window);
        S[i * n_kv + j] = masked ? -INFINITY : s;
      }
    for (int64_t i = 0; i < n_q; ++i) {
      double* row = &S[i * n_kv];
      double mx = *std::max_element(row, row + n_kv);
      if (mx == -INFINITY) continue;  // nothing visible: output stays zero
      if (p.sinks) mx = std::max(mx, static_cast<double>(p.sinks[h]));
      double sum = p.sinks ? std::exp(p.sinks[h] - mx) : 0.0;
      for (int64_t j = 0; j < n_kv; ++j) sum += row[j] = std::exp(row[j] - mx);
      for (int x = 0; x < d; ++x) {
        double o = 0.0;
        for (int64_t j = 0; j < n_kv; ++j) o += row[j] / sum * V[j * kv_row + g * d + x];
        out[(i * p.n_head + h) * d + x] = static_cast<float>(o);
      }
    }
  }
  return out;
}

struct AttnCase {
  DType k_type, v_type;
  int n_head, n_head_kv, head_dim;
  int64_t n_slots, filled, n_q;
  int window;
  float softcap;
  bool sinks = false;  // per-head sink logits (gpt-oss)
  std::string label() const {
    return std::string("K ") + dtype_name(k_type) + " V " + dtype_name(v_type) + " heads " + std::to_string(n_head) +
           "/" + std::to_string(n_head_kv) + " d " + std::to_string(head_dim) + " slots " + std::to_string(filled) +
           "/" + std::to_string(n_slots) + " q " + std::to_string(n_q) + " window " + std::to_string(window) +
           " softcap " + std::to_string(softcap) + (sinks ? " sinks" : "");
  }
};

void run_case(const AttnCase& c, check::Rng& rng) {
  INFO(c.label());
  // Keys at positions 0 .. filled-1; the queries are the last n_q of them (a prompt chunk
  // already stored in the ring, or the one decode token).
  const Ring ring(rng, c.k_type, c.v_type, c.n_head_kv, c.head_dim, c.n_slots, c.filled, 0);
  std::vector<int32_t> q_pos(static_cast<size_t>(c.n_q));
  for (int64_t i = 0; i < c.n_q; ++i) q_pos[static_cast<size_t>(i)] = static_cast<int32_t>(c.filled - c.n_q + i);
  const int64_t cols = static_cast<int64_t>(c.n_head) * c.head_dim;
  const auto q = rng.uniform(static_cast<size_t>(c.n_q * cols), -1.5f, 1.5f);
  AttentionParams p{c.n_head, c.n_head_kv, c.head_dim, 1.0f / std::sqrt(static_cast<float>(c.head_dim)), c.window,
                    c.softcap};
  // Sinks from well below to well above the scores (|s| <= ~2 here): from no effect to most
  // of the weight.
  std::vector<float> sinks;
  if (c.sinks) {
    sinks = rng.uniform(static_cast<size_t>(c.n_head), -3.0f, 5.0f);
    p.sinks = sinks.data();
  }

  std::vector<float> want(q.size());
  ops::reference::attention(check::dense_view(q, c.n_q, cols), q_pos.data(), ring.view(), p,
                            check::dense_mat(want, c.n_q, cols));
  check::expect_close(want, naive_attention(q, q_pos, ring, p), 1e-10, "reference vs naive");

  for (SimdLevel level : check::simd_levels()) {
    check::ScopedSimdLevel scoped(level);
    for (int threads : {1, 3}) {
      ThreadPool pool(threads);
      check::StridedF32 qs(q, c.n_q, cols, 5), out(c.n_q, cols, 3);
      ops::attention(pool, qs.view(), q_pos.data(), ring.view(), p, out.mat());
      check::expect_close(out.dense(), want, kAttentionNmse,
                          std::string("tiled ") + simd_level_name(level) + " t" + std::to_string(threads));
      CHECK(out.guards_intact());
    }
  }
}

}  // namespace

TEST_CASE("attention matches the reference and a naive softmax(QK^T)V for every cache type") {
  check::Rng rng(21);
  std::vector<std::pair<DType, DType>> types;  // every row of the KV type table, and a mix
  for (const KVType& kv : kKVTypes) types.emplace_back(kv.type, kv.type);
  types.emplace_back(DType::F16, DType::Q8_0);
  struct Heads {
    int n_head, n_head_kv, head_dim;
  };
  // GQA 4:2 at d 64, MQA 3:1 at d 32, MHA 2:2 at d 16 (heads straddle q8_0/q4_0 blocks)
  // go through the kernels a row at a time; GQA 8:1 at d 128 and 10:2 at d 32 (the rows of
  // a token straddle the kernels' 8-row blocks) as lanes of a vector.
  const Heads heads[] = {{4, 2, 64}, {3, 1, 32}, {2, 2, 16}, {8, 1, 128}, {10, 2, 32}};
  struct Ctx {
    int64_t n_slots, filled, n_q;
  };
  // decode in a part-filled ring, prefill chunks, a ring big enough to be split across threads
  const Ctx ctxs[] = {{1, 1, 1}, {37, 30, 1}, {67, 67, 1}, {70, 70, 9}, {200, 180, 45}, {700, 650, 1}};
  int variant = 0;
  for (const auto& [kt, vt] : types)
    for (const Heads& h : heads)
      for (const Ctx& x : ctxs) {
        // window and soft-cap take turns so every combination of them meets every type
        const int window = (variant % 4 == 1 || variant % 4 == 3) ? 24 : 0;
        const float softcap = (variant % 4 >= 2) ? 1.5f : 0.0f;
        ++variant;
        if (h.head_dim == 128 && x.n_slots == 200) continue;  // keep the suite quick
        run_case(AttnCase{kt, vt, h.n_head, h.n_head_kv, h.head_dim, x.n_slots, x.filled, x.n_q, window, softcap}, rng);
      }
}

TEST_CASE("attention with sinks (gpt-oss) matches the reference and the naive formula") {
  check::Rng rng(27);
  // gpt-oss's shape in small (GQA 8:1, d 64, alternate layers windowed), MHA, the lanes path
  // (10:2), odd head sizes; decode, verify and prefill, rings split over threads.
  const AttnCase cases[] = {
      {DType::F16, DType::F16, 8, 1, 64, 70, 70, 1, 0, 0.0f, true},
      {DType::F16, DType::F16, 8, 1, 64, 200, 180, 45, 16, 0.0f, true},
      {DType::Q8_0, DType::Q8_0, 8, 1, 64, 700, 650, 1, 0, 0.0f, true},
      {DType::F32, DType::F32, 4, 2, 64, 700, 650, 3, 128, 0.0f, true},
      {DType::Q4_0, DType::F16, 10, 2, 32, 70, 70, 9, 0, 1.5f, true},
      {DType::F32, DType::F32, 2, 2, 24, 37, 30, 1, 0, 0.0f, true},
      {DType::F32, DType::F32, 3, 1, 40, 67, 67, 7, 5, 0.0f, true},
  };
  for (const AttnCase& c : cases) run_case(c, rng);
}

TEST_CASE("a sink far below every score changes no bit; a query that sees no key stays zero with sinks") {
  check::Rng rng(28);
  const Ring ring(rng, DType::F16, DType::F16, 2, 64, 300, 280, 10);
  const int64_t cols = 8 * 64;
  const auto q = rng.uniform(static_cast<size_t>(3 * cols), -1.5f, 1.5f);
  const std::vector<int32_t> q_pos{289, 5, 150};  // the one at 5 precedes every key
  const std::vector<float> far(8, -1e30f);
  for (SimdLevel level : check::simd_levels()) {
    check::ScopedSimdLevel scoped(level);
    ThreadPool pool(3);
    AttentionParams p{8, 2, 64, 0.125f, 0, 0.0f};
    std::vector<float> plain(q.size()), sunk(q.size(), 99.0f);
    ops::attention(pool, check::dense_view(q, 3, cols), q_pos.data(), ring.view(), p, check::dense_mat(plain, 3, cols));
    p.sinks = far.data();
    ops::attention(pool, check::dense_view(q, 3, cols), q_pos.data(), ring.view(), p, check::dense_mat(sunk, 3, cols));
    CHECK(std::memcmp(plain.data(), sunk.data(), plain.size() * sizeof(float)) == 0);
    const std::vector<float> high(8, 3.0f);
    p.sinks = high.data();
    ops::attention(pool, check::dense_view(q, 3, cols), q_pos.data(), ring.view(), p, check::dense_mat(sunk, 3, cols));
    for (int64_t x = 0; x < cols; ++x) CHECK(sunk[cols + x] == 0.0f);
    // A query alone gives the bits it gives in the batch.
    std::vector<float> alone(static_cast<size_t>(cols));
    const MatView q0{DType::F32, cols, 1, static_cast<size_t>(cols) * sizeof(float), q.data() + 2 * cols};
    ops::attention(pool, q0, &q_pos[2], ring.view(), p, check::dense_mat(alone, 1, cols));
    CHECK(std::memcmp(alone.data(), sunk.data() + 2 * cols, alone.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("attention odd head sizes on float caches (head_dim not a multiple of 8)") {
  check::Rng rng(22);
  for (DType t : {DType::F32, DType::F16})
    for (int d : {20, 36}) run_case(AttnCase{t, t, 6, 3, d, 90, 77, 5, 0, 0.0f}, rng);
}

TEST_CASE("an f16 cache gives bitwise what an f32 cache of the same values gives") {
  // f16 rows are converted exactly, into the f32 tiles the lanes kernel reads for many rows
  // or as the kernels load them in place (rows in their own arithmetic; lanes with one
  // block of rows per KV head), so the kernels see the f32 cache's values, in the same
  // order, whether rows go a row at a time or in lanes.
  check::Rng rng(23);
  struct Heads {
    int n_head, n_head_kv, head_dim;
  };
  // a row at a time: MHA at d 128 (a MoE model's), GQA 6:3 at an odd d, MQA 3:1; lanes: 8:1,
  // and 8:2 at an odd d (1 and 2 tokens: one block of rows, read in place; 5: decoded)
  const Heads heads[] = {{16, 16, 128}, {6, 3, 36}, {3, 1, 64}, {8, 1, 64}, {8, 2, 36}};
  for (const Heads& h : heads)
    for (int64_t n_q : {1, 2, 5}) {
      const Ring f16(rng, DType::F16, DType::F16, h.n_head_kv, h.head_dim, 300, 290, 0);
      Ring f32(rng, DType::F32, DType::F32, h.n_head_kv, h.head_dim, 300, 0, 0);
      const int64_t row = static_cast<int64_t>(h.n_head_kv) * h.head_dim, cols = static_cast<int64_t>(h.n_head) * h.head_dim;
      const std::vector<float> k = f16.decoded(false), v = f16.decoded(true);
      for (size_t j = 0; j < f16.pos.size(); ++j) {
        ops::store_row(k.data() + j * row, row, DType::F32, f32.k.data() + j * f32.k_row_bytes);
        ops::store_row(v.data() + j * row, row, DType::F32, f32.v.data() + j * f32.v_row_bytes);
      }
      f32.pos = f16.pos;
      const auto q = rng.uniform(static_cast<size_t>(n_q * cols));
      std::vector<int32_t> q_pos(static_cast<size_t>(n_q));
      for (int64_t i = 0; i < n_q; ++i) q_pos[static_cast<size_t>(i)] = static_cast<int32_t>(290 - n_q + i);
      const AttentionParams p{h.n_head, h.n_head_kv, h.head_dim, 0.1f, 0, 0.0f};
      for (SimdLevel level : check::simd_levels()) {
        check::ScopedSimdLevel scoped(level);
        ThreadPool pool(2);
        std::vector<float> from16(q.size()), from32(q.size());
        ops::attention(pool, check::dense_view(q, n_q, cols), q_pos.data(), f16.view(), p,
                       check::dense_mat(from16, n_q, cols));
        ops::attention(pool, check::dense_view(q, n_q, cols), q_pos.data(), f32.view(), p,
                       check::dense_mat(from32, n_q, cols));
        CAPTURE(h.n_head);
        CAPTURE(h.head_dim);
        CAPTURE(n_q);
        CHECK(std::memcmp(from16.data(), from32.data(), from16.size() * sizeof(float)) == 0);
      }
    }
}

// Attends a batch of queries (by default 32 rows: half a query tile) to a ring filled
// in slot order, as the KV cache fills, then each query alone, at depths where the splits of
// a ring filled that far change; checks the outputs are bitwise equal.
static void check_alone_equals_batch(check::Rng& rng, int n_head, int n_head_kv, int n_q = 0) {
  const int d = 64;
  if (n_q == 0) n_q = 32 / (n_head / n_head_kv);
  const int64_t row = static_cast<int64_t>(n_head_kv) * d, cols = static_cast<int64_t>(n_head) * d;
  Ring ring(rng, DType::F16, DType::F16, n_head_kv, d, 2048, 0, 0);
  for (int64_t slot = 0; slot < 600; ++slot) {
    ops::store_row(rng.uniform(static_cast<size_t>(row)).data(), row, DType::F16, ring.k.data() + slot * ring.k_row_bytes);
    ops::store_row(rng.uniform(static_cast<size_t>(row)).data(), row, DType::F16, ring.v.data() + slot * ring.v_row_bytes);
  }
  const AttentionParams p{n_head, n_head_kv, d, 0.125f, 0, 0.0f};
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    for (int32_t end : {7, 130, 227, 258, 355, 517, 600}) {
      if (end < n_q) continue;
      CAPTURE(threads);
      CAPTURE(end);
      const auto q = rng.uniform(static_cast<size_t>(n_q * cols));
      std::vector<int32_t> q_pos(n_q);
      for (int i = 0; i < n_q; ++i) q_pos[i] = end - n_q + i;
      for (int64_t slot = 0; slot < 2048; ++slot) ring.pos[slot] = slot < end ? static_cast<int32_t>(slot) : -1;
      std::vector<float> batch(q.size());
      ops::attention(pool, check::dense_view(q, n_q, cols), q_pos.data(), ring.view(), p, check::dense_mat(batch, n_q, cols));
      for (int i = 0; i < n_q; ++i) {
        for (int64_t slot = 0; slot < 2048; ++slot) ring.pos[slot] = slot <= q_pos[i] ? static_cast<int32_t>(slot) : -1;
        std::vector<float> one(static_cast<size_t>(cols));
        ops::attention(pool, check::dense_view(std::vector<float>(q.begin() + i * cols, q.begin() + (i + 1) * cols), 1, cols),
                       &q_pos[i], ring.view(), p, check::dense_mat(one, 1, cols));
        CHECK(std::memcmp(one.data(), batch.data() + i * cols, one.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("a query alone gives bitwise what it gives in a verify batch with later tokens") {
  // Speculative decoding relies on this (verify passes, kMaxVerifyRows rows of one sequence).
  check::Rng rng(26);
  // Groups of 8 query heads fill the kernels' 8-row blocks with one token each.
  check_alone_equals_batch(rng, 32, 4);
  // Groups of 5 pack rows of several tokens into a block: a token's rows sit in other lanes
  // (and blocks) in the batch than alone.
  check_alone_equals_batch(rng, 20, 4);
  // Groups of 3 go through the kernels a row at a time.
  check_alone_equals_batch(rng, 12, 4);
}

TEST_CASE("a query gives bitwise the same output in a prefill chunk of any length as alone") {
  // Chunked prefill, prefix-cache hits and preemption all compute a token in chunks other
  // than the ones it would meet alone; batch invariance needs this.
  check::Rng rng(27);
  check_alone_equals_batch(rng, 32, 4, 70);
  check_alone_equals_batch(rng, 12, 4, 130);
}

// The ring's rows moved into shuffled blocks of a larger pool, read through a block table.
struct PagedCopy {
  std::vector<uint8_t> k, v;
  std::vector<int32_t> pos, table;
  KVView view;
  PagedCopy(check::Rng& rng, const KVView& ring, int block_size, int64_t first_block) {
    const int64_t n_blocks = ring.n_slots / block_size, pool_blocks = n_blocks * 2 + 3;
    std::vector<int32_t> phys(static_cast<size_t>(pool_blocks));
    std::iota(phys.begin(), phys.end(), 0);
    std::shuffle(phys.begin(), phys.end(), rng.engine());
    k.assign(static_cast<size_t>(pool_blocks * block_size) * ring.k_row_bytes, 0xEE);
    v.assign(static_cast<size_t>(pool_blocks * block_size) * ring.v_row_bytes, 0xEE);
    pos.assign(static_cast<size_t>(pool_blocks * block_size), 12345);  // other sequences' tokens
    for (int64_t b = first_block; b < n_blocks; ++b) {
      table.push_back(phys[static_cast<size_t>(b)]);
      for (int j = 0; j < block_size; ++j) {
        const int64_t from = b * block_size + j, to = static_cast<int64_t>(phys[static_cast<size_t>(b)]) * block_size + j;
        std::memcpy(k.data() + to * ring.k_row_bytes, static_cast<const uint8_t*>(ring.k) + from * ring.k_row_bytes, ring.k_row_bytes);
        std::memcpy(v.data() + to * ring.v_row_bytes, static_cast<const uint8_t*>(ring.v) + from * ring.v_row_bytes, ring.v_row_bytes);
        pos[static_cast<size_t>(to)] = ring.slot_pos[from];
      }
    }
    view = ring;
    view.k = k.data();
    view.v = v.data();
    view.slot_pos = pos.data();
    view.blocks = table.data();
    view.block_size = block_size;
    view.n_slots = static_cast<int64_t>(table.size()) * block_size;
    view.first_slot = first_block * block_size;
  }
};

TEST_CASE("attention through a block table gives bitwise the contiguous cache's output") {
  check::Rng rng(28);
  const int n_head = 8, n_head_kv = 2, d = 64;
  const int64_t row = static_cast<int64_t>(n_head_kv) * d, cols = static_cast<int64_t>(n_head) * d;
  for (DType t : {DType::F16, DType::Q8_0, DType::Q4_0}) {
    for (int block_size : {32, 64}) {
      CAPTURE(block_size);
      // 640 slots in order, positions 0..599; the first two blocks given back (a window).
      Ring ring(rng, t, t, n_head_kv, d, 640, 0, 0);
      for (int64_t slot = 0; slot < 600; ++slot) {
        ring.pos[static_cast<size_t>(slot)] = static_cast<int32_t>(slot);
        ops::store_row(rng.uniform(static_cast<size_t>(row)).data(), row, t, ring.k.data() + slot * ring.k_row_bytes);
        ops::store_row(rng.uniform(static_cast<size_t>(row)).data(), row, t, ring.v.data() + slot * ring.v_row_bytes);
      }
      for (int64_t first_block : {0, 2}) {
        CAPTURE(first_block);
        for (int64_t slot = 0; slot < first_block * block_size; ++slot) ring.pos[static_cast<size_t>(slot)] = -1;
        const PagedCopy paged(rng, ring.view(), block_size, first_block);
        for (int n_q : {1, 5, 40}) {
          const auto q = rng.uniform(static_cast<size_t>(n_q * cols));
          std::vector<int32_t> q_pos(n_q);
          for (int i = 0; i < n_q; ++i) q_pos[i] = 600 - n_q + i;
          const AttentionParams p{n_head, n_head_kv, d, 0.125f, first_block ? 300 : 0, 0.0f};
          for (int threads : {1, 2}) {
            ThreadPool pool(threads);
            std::vector<float> a(q.size()), b(q.size());
            ops::attention(pool, check::dense_view(q, n_q, cols), q_pos.data(), ring.view(), p, check::dense_mat(a, n_q, cols));
            ops::attention(pool, check::dense_view(q, n_q, cols), q_pos.data(), paged.view, p, check::dense_mat(b, n_q, cols));
            CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
            std::vector<float> want(q.size());
            ops::reference::attention(check::dense_view(q, n_q, cols), q_pos.data(), paged.view, p,
                                      check::dense_mat(want, n_q, cols));
            check::expect_close(b, want, kAttentionNmse, "paged vs reference");
          }
        }
      }
    }
  }
}

TEST_CASE("attention with many KV heads (decode splits the heads of a row over items)") {
  check::Rng rng(25);
  for (DType t : {DType::F16, DType::Q8_0})
    for (int64_t n_q : {1, 3}) run_case(AttnCase{t, t, 12, 12, 128, 90, 90, n_q, 0, 0.0f}, rng);
}

TEST_CASE("attention of a query that sees no key is zero") {
  check::Rng rng(23);
  // ring positions 10..49; query at position 5 (before all of them), one at 12 with window 1
  const Ring ring(rng, DType::F16, DType::F16, 1, 32, 40, 40, 10);
  const auto q = rng.uniform(2 * 32);
  const std::vector<int32_t> q_pos{5, 12};
  for (SimdLevel level : check::simd_levels()) {
    check::ScopedSimdLevel scoped(level);
    ThreadPool pool(3);
    std::vector<float> out(q.size(), 99.0f);
    AttentionParams p{1, 1, 32, 0.2f, 0, 0.0f};
    ops::attention(pool, check::dense_view(q, 2, 32), q_pos.data(), ring.view(), p, check::dense_mat(out, 2, 32));
    for (int x = 0; x < 32; ++x) CHECK(out[x] == 0.0f);
    // with window 1 the query at 12 sees exactly the key at 12: out = that V row
    p.window = 1;
    ops::attention(pool, check::dense_view(q, 2, 32), q_pos.data(), ring.view(), p, check::dense_mat(out, 2, 32));
    const auto V = ring.decoded(true);
    const size_t slot = static_cast<size_t>(std::find(ring.pos.begin(), ring.pos.end(), 12) - ring.pos.begin());
    for (int x = 0; x < 32; ++x) CHECK(out[32 + x] == doctest::Approx(V[slot * 32 + x]).epsilon(1e-6));
  }
}

TEST_CASE("attention rejects inconsistent arguments with a clear error") {
  check::Rng rng(24);
  const Ring ring(rng, DType::Q8_0, DType::Q8_0, 2, 32, 8, 8, 0);
  std::vector<float> q(3 * 32), out(q.size());
  const int32_t pos[] = {7};
  ThreadPool pool(1);
  const AttentionParams bad_group{3, 2, 32, 1.0f, 0, 0.0f};  // 3 heads over 2 KV heads
  CHECK_THROWS_AS(ops::attention(pool, check::dense_view(q, 1, 96), pos, ring.view(), bad_group,
                                 check::dense_mat(out, 1, 96)),
                  Error);
  KVView odd = ring.view();
  odd.k_type = DType::Q4_K;
  const AttentionParams ok{2, 2, 32, 1.0f, 0, 0.0f};
  CHECK_THROWS_AS(ops::attention(pool, check::dense_view(q, 1, 64), pos, odd, ok, check::dense_mat(out, 1, 64)), Error);
  KVView short_rows = ring.view();
  short_rows.k_row_bytes = 10;
  CHECK_THROWS_AS(ops::attention(pool, check::dense_view(q, 1, 64), pos, short_rows, ok, check::dense_mat(out, 1, 64)),
                  Error);
}
