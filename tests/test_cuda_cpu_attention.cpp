// The CUDA attention kernels (cuda/kernels/attention.cuh) run on the CPU through cpu_exec
// and compared with ops::reference::attention over the same bytes: a paged cache whose
// block table is shuffled (physical blocks out of order, spare blocks full of NaN bytes so
// a read outside the sequence shows), GQA 8:2 and 4:4, softcap, a sliding window past
// given-back blocks (first_slot > 0), queries that see no key, f32/f16/q8_0/q4_0 K and V,
// head_dim 64/128/256 (the exact tile widths) and 16/32/80/96 (padded ones; 16 with
// quantised heads that straddle 32-blocks), decode (chunked, combined) and prefill shapes;
// outputs strided and sentinel-fenced, scratch fenced, and in shuffled thread order. The
// device table has room for more blocks than the sequence holds (entries naming a NaN
// block), as the backend plans by capacity: chunks past the live keys must read nothing.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cpu/ops_reference.h"
#include "backend/kv_types.h"
#include "backend_check.h"
#include "cuda/cpu_exec/launch.h"
#include "cuda/kernels/attention.cuh"
#include "util/error.h"

namespace {

using ember::DType;
using ember::cpu_exec::Order;
using ember::cpu_exec::ScopedSchedule;
namespace check = ember::check;

struct Case {
  const char* name;
  int n_head, n_head_kv, head_dim;
  DType k_type, v_type;
  int block_size;
  int64_t first_slot, n_tokens;
  int window;
  float softcap;
  std::vector<int32_t> q_pos;
  int spare_blocks = 3;  // table entries past the sequence's blocks (planned for, never read)
  bool sinks = false;    // per-head sink logits (gpt-oss)
};

ember::AttentionParams params_of(const Case& c) {
  ember::AttentionParams p;
  p.n_head = c.n_head;
  p.n_head_kv = c.n_head_kv;
  p.head_dim = c.head_dim;
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  p.window = c.window;
  p.softcap = c.softcap;
  return p;
}

// The sequences of one launch: each holds ordinals [first_slot, n_tokens) and asks q_pos.
struct Seq {
  int64_t first_slot, n_tokens;
  std::vector<int32_t> q_pos;
};

// The sequences' K and V in one block pool: each sequence's ordinals in the physical blocks of
// its own table, the blocks of all tables shuffled together; every other row (spare blocks,
// the last blocks' tails) NaN bytes. The device tables (DevKV) follow one another, each with
// room for spare_blocks more blocks than the longest needs (entries naming a NaN block).
struct PagedCache {
  std::vector<std::vector<int32_t>> tables;  // per sequence
  std::vector<int32_t> dev_tables;           // DevKV tables: first_slot, n_tokens, blocks, spares
  std::vector<int32_t> slot_pos;             // per physical row, -1 when empty (the reference's view)
  std::vector<uint8_t> k, v;
  size_t k_row_bytes = 0, v_row_bytes = 0;
  int64_t capacity_blocks = 0, table_stride = 0;

  PagedCache(const Case& c, const std::vector<Seq>& seqs, check::Rng& rng) {
    const int64_t cols = static_cast<int64_t>(c.n_head_kv) * c.head_dim;
    k_row_bytes = ember::dtype_row_bytes(c.k_type, cols) + 8;  // padded rows
    v_row_bytes = ember::dtype_row_bytes(c.v_type, cols) + 8;
    int64_t n_blocks = 0, longest = 0;
    for (const Seq& sq : seqs) {
      const int64_t nb = (sq.n_tokens - sq.first_slot + c.block_size - 1) / c.block_size;
      n_blocks += nb;
      longest = std::max(longest, nb);
    }
    const int64_t n_phys = n_blocks + 2;
    std::vector<int32_t> phys(static_cast<size_t>(n_phys));
    std::iota(phys.begin(), phys.end(), 0);
    std::shuffle(phys.begin(), phys.end(), rng.engine());
    const int32_t nan_block = phys[static_cast<size_t>(n_blocks)];
    const int64_t n_rows = n_phys * c.block_size;
    slot_pos.assign(static_cast<size_t>(n_rows), -1);
    k.assign(static_cast<size_t>(n_rows) * k_row_bytes, 0xff);
    v.assign(static_cast<size_t>(n_rows) * v_row_bytes, 0xff);
    capacity_blocks = longest + c.spare_blocks;
    table_stride = ember::cuda::kDevKVHeader + capacity_blocks;
    size_t next = 0;
    for (const Seq& sq : seqs) {
      const int64_t nb = (sq.n_tokens - sq.first_slot + c.block_size - 1) / c.block_size;
      tables.emplace_back(phys.begin() + static_cast<ptrdiff_t>(next), phys.begin() + static_cast<ptrdiff_t>(next + nb));
      next += static_cast<size_t>(nb);
      const std::vector<int32_t>& table = tables.back();
      for (int64_t o = sq.first_slot; o < sq.n_tokens; ++o) {
        const int64_t row = static_cast<int64_t>(table[(o - sq.first_slot) / c.block_size]) * c.block_size +
                            o % c.block_size;
        slot_pos[row] = static_cast<int32_t>(o);
        ember::ops::store_row(rng.uniform(cols, -2.0f, 2.0f).data(), cols, c.k_type, k.data() + row * k_row_bytes);
        ember::ops::store_row(rng.uniform(cols, -2.0f, 2.0f).data(), cols, c.v_type, v.data() + row * v_row_bytes);
      }
      dev_tables.push_back(static_cast<int32_t>(sq.first_slot));
      dev_tables.push_back(static_cast<int32_t>(sq.n_tokens));
      dev_tables.insert(dev_tables.end(), table.begin(), table.end());
      dev_tables.resize(static_cast<size_t>(table_stride) * tables.size(), nan_block);
    }
  }

  ember::KVView view(const Case& c, const Seq& sq, size_t i) const {
    ember::KVView kv;
    kv.k_type = c.k_type;
    kv.v_type = c.v_type;
    kv.k = k.data();
    kv.v = v.data();
    kv.k_row_bytes = k_row_bytes;
    kv.v_row_bytes = v_row_bytes;
    kv.slot_pos = slot_pos.data();
    kv.n_slots = static_cast<int64_t>(tables[i].size()) * c.block_size;
    kv.blocks = tables[i].data();
    kv.block_size = c.block_size;
    kv.first_slot = sq.first_slot;
    return kv;
  }

  ember::cuda::DevKV dev(const Case& c, const Seq& first) const {
    return ember::cuda::dev_kv(view(c, first, 0), dev_tables.data(), capacity_blocks, table_stride);
  }
};

std::vector<int32_t> positions(int32_t from, int32_t count) {
  std::vector<int32_t> pos(static_cast<size_t>(count));
  std::iota(pos.begin(), pos.end(), from);
  return pos;
}

// The sequences' queries in one launch (a run each), against the reference run per sequence;
// returns the chunks the launch used.
int run_sequences(const Case& c, const std::vector<Seq>& seqs, uint64_t seed) {
  check::Rng rng(seed);
  const PagedCache cache(c, seqs, rng);
  ember::AttentionParams p = params_of(c);
  std::vector<float> sinks;
  if (c.sinks) {
    sinks = rng.uniform(static_cast<size_t>(c.n_head), -3.0f, 5.0f);
    p.sinks = sinks.data();
  }
  const int64_t cols = static_cast<int64_t>(c.n_head) * c.head_dim;
  std::vector<int32_t> q_pos, bounds{0};
  int64_t longest = 0;
  for (const Seq& sq : seqs) {
    q_pos.insert(q_pos.end(), sq.q_pos.begin(), sq.q_pos.end());
    bounds.push_back(static_cast<int32_t>(q_pos.size()));
    longest = std::max(longest, static_cast<int64_t>(sq.q_pos.size()));
  }
  const int64_t n_q = static_cast<int64_t>(q_pos.size());
  const auto q = rng.uniform(static_cast<size_t>(n_q * cols), -3.0f, 3.0f);

  std::vector<float> want(q.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    const int64_t t0 = bounds[i], n = bounds[i + 1] - bounds[i];
    const std::vector<float> qi(q.begin() + t0 * cols, q.begin() + (t0 + n) * cols);
    std::vector<float> wi(qi.size());
    ember::ops::reference::attention(check::dense_view(qi, n, cols), seqs[i].q_pos.data(), cache.view(c, seqs[i], i),
                                     p, check::dense_mat(wi, n, cols));
    std::copy(wi.begin(), wi.end(), want.begin() + t0 * cols);
  }

  check::StridedF32 q_in(q, n_q, cols, 3);
  check::StridedF32 out(n_q, cols, 5);  // unwritten elements keep the pad sentinel
  const ember::cuda::DevKV kv = cache.dev(c, seqs[0]);
  const ember::cuda::DevRuns runs{bounds.data(), static_cast<int>(seqs.size()), longest};
  check::GuardedBuffer scratch(ember::cuda::attention_scratch_bytes(p, n_q, longest, kv.capacity));
  ember::cuda::launch_attention(q_in.view(), q_pos.data(), runs, kv, p, out.mat(), scratch.data(), nullptr);
  CHECK(out.guards_intact());
  CHECK(scratch.guards_intact());
  check::expect_close(out.dense(), want, 1e-8, c.name);
  return ember::cuda::attention_plan(p, longest, kv.capacity).n_chunks;
}

// A case is one sequence alone.
int run_case(const Case& c, uint64_t seed) { return run_sequences(c, {Seq{c.first_slot, c.n_tokens, c.q_pos}}, seed); }

std::vector<Case> cases() {
  std::vector<int32_t> window_q = positions(260, 40);
  window_q[5] = 127;   // before every key left in the cache: a zero row
  window_q[17] = 200;  // its window reaches into the given-back blocks
  window_q[30] = 20;   // sees nothing, in the middle of the batch
  std::vector<int32_t> early_q = positions(0, 40);
  std::reverse(early_q.begin(), early_q.end());
  return {
      {"decode 8:2 f16/f16 d128", 8, 2, 128, DType::F16, DType::F16, 32, 0, 300, 0, 0.0f, {299}},
      {"verify 4:4 f32/f32 d64 softcap", 4, 4, 64, DType::F32, DType::F32, 32, 0, 257, 0, 2.0f, {254, 255, 256}},
      {"prefill 8:2 q8_0/q4_0 d64 window first_slot", 8, 2, 64, DType::Q8_0, DType::Q4_0, 64, 128, 300, 100, 0.0f,
       window_q},
      {"prefill 4:4 q4_0/q8_0 d128 softcap one chunk", 4, 4, 128, DType::Q4_0, DType::Q8_0, 32, 0, 40, 0, 3.0f,
       early_q, 0},
      {"verify 8:2 f16/q8_0 d256 window", 8, 2, 256, DType::F16, DType::Q8_0, 32, 32, 200, 64, 0.0f,
       {150, 199, 40}},
      {"decode 4:4 f32/f16 d128 first_slot window", 4, 4, 128, DType::F32, DType::F16, 64, 64, 290, 70, 0.0f, {289}},
      {"verify with no keys left", 8, 2, 64, DType::F16, DType::F16, 32, 64, 64, 16, 0.0f, {70, 64, 90}},
      // head_dims below a tile width: d of D = 32, 96 columns used
      {"decode 8:2 f16/f16 d16", 8, 2, 16, DType::F16, DType::F16, 32, 0, 290, 0, 0.0f, {289}},
      {"prefill 4:4 f32/f32 d16 softcap", 4, 4, 16, DType::F32, DType::F32, 32, 0, 70, 0, 2.0f, positions(30, 40)},
      {"verify 4:2 q4_0/q8_0 d16 heads straddle blocks", 4, 2, 16, DType::Q4_0, DType::Q8_0, 32, 32, 150, 0, 0.0f,
       {149, 100, 20}},
      {"decode 8:2 q8_0/q8_0 d32", 8, 2, 32, DType::Q8_0, DType::Q8_0, 32, 0, 300, 0, 0.0f, {299}},
      {"prefill 4:4 f16/f32 d32 window first_slot", 4, 4, 32, DType::F16, DType::F32, 64, 64, 200, 50, 0.0f,
       positions(170, 24)},
      {"decode 8:2 f32/f16 d80 softcap", 8, 2, 80, DType::F32, DType::F16, 32, 0, 260, 0, 3.0f, {259}},
      {"prefill 4:4 f16/f16 d80", 4, 4, 80, DType::F16, DType::F16, 32, 0, 60, 0, 0.0f, early_q},
      {"verify 8:2 q8_0/f16 d96 window", 8, 2, 96, DType::Q8_0, DType::F16, 32, 0, 230, 100, 0.0f, {229, 228, 90}},
      {"prefill 4:4 f32/q8_0 d96", 4, 4, 96, DType::F32, DType::Q8_0, 32, 0, 45, 0, 0.0f, positions(5, 40)},
  };
}

}  // namespace

TEST_CASE("cpu_exec: the CUDA attention kernels match ops::reference::attention") {
  bool chunked = false, single = false;
  uint64_t seed = 1;
  for (const Case& c : cases()) {
    const int chunks = run_case(c, seed++);
    chunked |= chunks > 1;
    single |= chunks == 1;
  }
  CHECK(chunked);  // both the combine and the direct-write paths were exercised
  CHECK(single);
}

TEST_CASE("cpu_exec: the CUDA attention reads every KV type of the table") {
  uint64_t seed = 100;
  for (const ember::KVType& kv : ember::kKVTypes) {
    const std::string name = std::string("decode 4:2 d64 ") + kv.name;
    run_case({name.c_str(), 4, 2, 64, kv.type, kv.type, 32, 0, 70, 0, 0.0f, {69}}, seed++);
  }
}

// A step's sequences in one launch: decode (a query each, chunked, lengths from none to past
// several blocks) and a mix of decode, verification and prefill runs with a window that gave
// blocks back, each run over its own table among the shared pool's shuffled blocks.
std::vector<Seq> decode_sequences() {
  return {{0, 300, {299}}, {0, 5, {4}}, {64, 64, {70}}, {0, 33, {32}}, {32, 190, {189}}};
}
std::vector<Seq> mixed_sequences() {
  return {{0, 120, {119}}, {64, 200, positions(180, 7)}, {0, 40, {39, 12, 25}}, {0, 1, {0}}};
}

TEST_CASE("cpu_exec: one CUDA attention launch serves several sequences, each over its own table") {
  Case decode{"5 sequences decoding, 8:2 f16/q8_0 d64", 8, 2, 64, DType::F16, DType::Q8_0, 32, 0, 0, 0, 0.0f, {}};
  CHECK(run_sequences(decode, decode_sequences(), 11) > 1);
  Case mixed{"4 runs of 1, 7, 3, 1 queries, 4:2 q4_0/f16 d128 window 50", 4, 2, 128, DType::Q4_0, DType::F16,
             32, 0, 0, 50, 2.0f, {}};
  run_sequences(mixed, mixed_sequences(), 12);
  mixed.window = 0;
  mixed.spare_blocks = 0;
  run_sequences(mixed, mixed_sequences(), 13);
}

TEST_CASE("cpu_exec: the CUDA attention with sinks (gpt-oss), direct and chunked, matches the reference") {
  bool chunked = false, single = false;
  uint64_t seed = 200;
  const std::vector<Case> all = cases();
  // Half of them (cpu_exec is slow): decode, prefill in one chunk, windows, softcaps, padded tiles.
  for (size_t i : {0, 2, 3, 6, 8, 9, 12, 15}) {
    Case c = all[i];
    c.sinks = true;
    const int chunks = run_case(c, seed++);
    chunked |= chunks > 1;
    single |= chunks == 1;
  }
  CHECK(chunked);
  CHECK(single);
  Case mixed{"4 runs with sinks, 8:1 f16/f16 d64 window 16", 8, 1, 64, DType::F16, DType::F16, 32, 0, 0, 16, 0.0f, {}};
  mixed.sinks = true;
  run_sequences(mixed, mixed_sequences(), 201);
}

TEST_CASE("cpu_exec: the CUDA attention kernels in shuffled thread order") {
  ScopedSchedule schedule({Order::Shuffled, 7});
  const std::vector<Case> all = cases();
  run_case(all[0], 100);
  run_case(all[2], 101);
  run_case(all[12], 102);  // d 80 in a 96 tile: the zeroed columns
  Case decode{"5 sequences decoding, shuffled", 8, 2, 64, DType::F16, DType::F16, 32, 0, 0, 0, 0.0f, {}};
  run_sequences(decode, decode_sequences(), 103);
}

TEST_CASE("cpu_exec: launch_attention refuses what the kernels cannot do") {
  check::Rng rng(3);
  Case c = cases()[0];
  const Seq only{c.first_slot, c.n_tokens, c.q_pos};
  const PagedCache cache(c, {only}, rng);
  std::vector<float> q(static_cast<size_t>(c.n_head * c.head_dim)), out(q.size());
  const std::vector<int32_t> bounds{0, 1};
  const ember::cuda::DevRuns one_run{bounds.data(), 1, 1};
  auto attempt = [&](ember::AttentionParams p, ember::cuda::DevKV kv,
                     ember::cuda::DevRuns runs = ember::cuda::DevRuns{}) {
    if (!runs.bounds) runs = one_run;
    std::vector<float> scratch(1 << 16);
    ember::cuda::launch_attention(check::dense_view(q, 1, c.n_head * c.head_dim), c.q_pos.data(), runs, kv, p,
                                  check::dense_mat(out, 1, c.n_head * c.head_dim), scratch.data(), nullptr);
  };
  const ember::AttentionParams p = params_of(c);
  ember::AttentionParams bad = p;
  bad.n_head_kv = 3;
  CHECK_THROWS_AS(attempt(bad, cache.dev(c, only)), ember::Error);
  bad = p;
  bad.head_dim = 4;  // not a multiple of 8; the shapes still agree (256 heads of 4 = 8 of 128)
  bad.n_head = 256;
  bad.n_head_kv = 64;
  CHECK_THROWS_AS(attempt(bad, cache.dev(c, only)), ember::Error);
  bad.head_dim = 16;  // a K row of 16 elements (one head) is half a q8_0 block; f16 is fine
  bad.n_head = 64;
  bad.n_head_kv = 1;
  ember::cuda::DevKV kv = cache.dev(c, only);
  std::vector<int32_t> empty = cache.dev_tables;
  empty[1] = empty[0];  // no keys to read: only the checks differ
  kv.table = empty.data();
  CHECK_NOTHROW(attempt(bad, kv));
  kv.k_type = DType::Q8_0;
  CHECK_THROWS_AS(attempt(bad, kv), ember::Error);
  kv = cache.dev(c, only);
  kv.k_type = DType::Q6_K;
  CHECK_THROWS_AS(attempt(p, kv), ember::Error);
  kv = cache.dev(c, only);
  kv.block_size = 48;
  CHECK_THROWS_AS(attempt(p, kv), ember::Error);
  kv = cache.dev(c, only);
  kv.v_row_bytes = 100;
  CHECK_THROWS_AS(attempt(p, kv), ember::Error);
  std::vector<float> scratch(1);
  CHECK_THROWS_AS(attempt(p, cache.dev(c, only), ember::cuda::DevRuns{bounds.data(), 1, 2}),
                  ember::Error);  // a run longer than the queries
  kv = cache.dev(c, only);
  kv.table_stride = 0;
  CHECK_THROWS_AS(attempt(p, kv, ember::cuda::DevRuns{bounds.data(), 2, 1}),
                  ember::Error);  // two runs, but their tables overlap
  CHECK_THROWS_AS(ember::cuda::launch_attention(check::dense_view(q, 1, c.n_head * c.head_dim), c.q_pos.data(),
                                                one_run, cache.dev(c, only), p,
                                                check::dense_mat(out, 1, c.n_head * c.head_dim), nullptr, nullptr),
                  ember::Error);  // decode is chunked here and needs scratch
}
