// The paged KV cache on its own: block tables, sliding-window give-back, rollback limits,
// clear, shift, the prefix cache (publish, hits, sharing, copy-on-write, LRU eviction), pool
// exhaustion, and a randomized run of thousands of operations audited after every one.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "util/thread_pool.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/ops.h"
#include "kv/kv_cache.h"
#include "util/error.h"

using namespace ember;

namespace {

// Host memory for the caches under test (their rows are read back directly).
Backend& host() {
  static ThreadPool pool(1);
  static CpuBackend backend(pool);
  return backend;
}

KVCacheConfig config(DType type, int n_ctx, int n_ubatch, std::vector<int> window, int n_seq = 2) {
  KVCacheConfig c;
  c.n_layer = static_cast<int>(window.size());
  c.n_seq = n_seq;
  c.n_ctx = n_ctx;
  c.n_ubatch = n_ubatch;
  c.k_row = 64;
  c.v_row = 64;
  c.k_type = type;
  c.v_type = type;
  c.window = std::move(window);
  return c;
}

// Appends tokens[0, n) to seq (positions continuing it) and commits, as a step would.
void feed(KVCache& kv, int seq, const std::vector<int32_t>& tokens) {
  for (int32_t t : tokens) kv.append(seq, kv.next_pos(seq), t);
  kv.commit(seq);
}

std::vector<int32_t> held_positions(const KVView& v) {
  std::vector<int32_t> held;
  for (int64_t j = 0; j < v.n_slots; ++j)
    if (v.slot_pos[v.row_of(j)] >= 0) held.push_back(v.slot_pos[v.row_of(j)]);
  return held;
}

std::vector<int32_t> iota(int n, int32_t from = 0) {
  std::vector<int32_t> v(n);
  for (int i = 0; i < n; ++i) v[i] = from + i;
  return v;
}

}  // namespace

TEST_CASE("KV bytes per token per type, and a pool of every sequence at n_ctx by default") {
  for (auto [type, bytes] : {std::pair{DType::F32, 256}, {DType::F16, 128}, {DType::Q8_0, 68}, {DType::Q4_0, 36}}) {
    KVCache kv(config(type, 100, 4, {0}), host());
    CHECK(kv.bytes_per_token() == 2 * static_cast<size_t>(bytes));
    CHECK(kv.stats().front().total == 2 * 4);  // 2 sequences x ceil(100 / 32)
    CHECK(kv.total_bytes() == KVCache::bytes_for(kv.config()));
  }
  CHECK_THROWS_AS(KVCache(config(DType::Q4_K, 16, 4, {0}), host()), Error);
  KVCacheConfig odd = config(DType::F16, 64, 4, {0});
  odd.block_size = 16;
  CHECK_THROWS_AS((KVCache{odd, host()}), Error);
}

TEST_CASE("a sequence holds its tokens rounded up to a block, not n_ctx") {
  KVCache kv(config(DType::F16, 4096, 512, {0, 0}, 16), host());
  for (int s = 0; s < 16; ++s) feed(kv, s, iota(300));
  CHECK(kv.blocks_held(0) == 10);  // ceil(300 / 32) in the one global group
  const KVBlockStats st = kv.stats().front();
  CHECK(st.used == 160);
  const double held_bytes = 160.0 * 32 * kv.bytes_per_token(), token_bytes = 16.0 * 300 * kv.bytes_per_token();
  CHECK(held_bytes / token_bytes <= 1.1);
  CHECK(kv.audit() == "");
}

TEST_CASE("sliding-window layers give back blocks behind the window and the rollback allowance") {
  KVCacheConfig c = config(DType::F32, 512, 8, {0, 40});
  c.rollback_tokens = 8;
  KVCache kv(c, host());
  feed(kv, 0, iota(200));
  feed(kv, 1, iota(3));
  CHECK(kv.n_tokens(0) == 200);
  // The global layer sees all 200; the local one at least positions 200 - 40 - 8 + 1 on.
  CHECK(held_positions(kv.view(0, 0)).size() == 200);
  const std::vector<int32_t> local = held_positions(kv.view(1, 0));
  CHECK(local.front() <= 153);
  CHECK(local.front() % 32 == 0);
  CHECK(local.back() == 199);
  CHECK(kv.view(1, 0).first_slot == local.front());
  // Rollback within the allowance is exact; beyond what was given back it throws.
  kv.rollback(0, 9);
  CHECK(kv.next_pos(0) == 191);
  CHECK(kv.audit() == "");
  CHECK_THROWS_AS(kv.rollback(0, 60), Error);
  CHECK(kv.n_tokens(0) == 191);  // a refused rollback changes nothing
  kv.rollback(0, 191);           // back to empty is always possible
  CHECK(kv.n_tokens(0) == 0);
  kv.clear(0);
  CHECK(kv.n_tokens(1) == 3);
  CHECK(kv.view(0, 0).n_slots == 0);
  CHECK(kv.audit() == "");
}

TEST_CASE("shift re-rotates kept keys to their new positions") {
  // Keys are RoPE(base_t, pos) rows; after dropping tokens the survivors must equal
  // RoPE(base_t, pos - n_discard), in the global and in the sliding-window group.
  ThreadPool pool(1);
  KVCacheConfig c = config(DType::F32, 160, 4, {0, 40});
  c.rollback_tokens = 4;
  KVCache kv(c, host());
  const int64_t row = 64;
  RopeParams rp;
  rp.n_rot = 32;
  rp.neox = true;
  rp.freq_base = 10000.0f;
  auto roped = [&](int t, int pos) {
    std::vector<float> r(row);
    for (int64_t j = 0; j < row; ++j) r[j] = std::sin(0.37f * t + 0.11f * j);
    int32_t p = pos;
    ops::rope(pool, F32Mat{r.data(), row, 1, row}, 32, &p, rp);
    return r;
  };
  const int n = 150;
  for (int t = 0; t < n; ++t) {
    auto slot = kv.append(0, t, 1000 + t);
    for (int il = 0; il < 2; ++il) {
      auto r = roped(t, t);
      ops::store_row(r.data(), row, DType::F32, kv.k_row(il, 0, slot));
    }
    kv.commit(0);
  }
  const int held_local = static_cast<int>(held_positions(kv.view(1, 0)).size());
  const int n_keep = 4, n_discard = 70;
  kv.shift(0, n_keep, n_discard, 32, [&](int) { return rp; });
  CHECK(kv.n_tokens(0) == n - n_discard);
  CHECK(kv.audit() == "");
  for (int il = 0; il < 2; ++il) {
    const KVView v = kv.view(il, 0);
    int checked = 0;
    double worst = 0;
    for (int64_t j = 0; j < v.n_slots; ++j) {
      const int p = v.slot_pos[v.row_of(j)];
      if (p < 0) continue;
      const int t = p < n_keep ? p : p + n_discard;  // the token that now sits at position p
      const auto want = roped(t, p);
      const float* got = reinterpret_cast<const float*>(static_cast<const uint8_t*>(v.k) + v.row_of(j) * v.k_row_bytes);
      for (int64_t x = 0; x < row; ++x) worst = std::max(worst, std::fabs(static_cast<double>(got[x]) - want[x]));
      ++checked;
    }
    CHECK(checked == (il == 0 ? n - n_discard : held_local));
    CHECK(worst < 1e-4);
  }
  // Appending continues at the new position in both groups.
  CHECK(kv.append(0, n - n_discard, 7).index == n - n_discard);
  kv.commit(0);
  CHECK(kv.audit() == "");
}

TEST_CASE("prefix cache: full blocks are shared by reference, kept after their sequence, evicted LRU") {
  KVCacheConfig c = config(DType::F16, 320, 64, {0}, 3);
  c.n_blocks = 12;
  KVCache kv(c, host());
  const std::vector<int32_t> prompt = iota(100, 5);  // 3 full blocks + 4 tokens
  feed(kv, 0, prompt);
  // A second prompt that starts alike reuses the three full blocks, not the partial one.
  std::vector<int32_t> second(prompt.begin(), prompt.begin() + 96);
  second.push_back(9999);
  CHECK(kv.attach_prefix(1, second) == 96);
  CHECK(kv.held_tokens(1) == std::vector<int32_t>(prompt.begin(), prompt.begin() + 96));
  CHECK(kv.stats().front().used == 4);  // 3 shared + seq 0's partial block
  CHECK(kv.audit() == "");
  // A prompt of exactly the cached blocks leaves its last token to compute.
  CHECK(kv.attach_prefix(2, std::vector<int32_t>(prompt.begin(), prompt.begin() + 64)) == 32);
  kv.clear(2);
  // Rolling back into a shared block copies it: seq 0 keeps its tokens.
  kv.rollback(1, 10);
  CHECK(kv.held_tokens(0) == prompt);
  CHECK(kv.held_tokens(1) == std::vector<int32_t>(prompt.begin(), prompt.begin() + 86));
  CHECK(kv.audit() == "");
  // After both end, the published blocks stay cached and still hit.
  kv.clear(0);
  kv.clear(1);
  CHECK(kv.stats().front().cached == 3);
  CHECK(kv.attach_prefix(0, prompt) == 96);
  kv.clear(0);
  // Filling the pool with other tokens evicts them, least recently used first.
  feed(kv, 1, iota(9 * 32, 50000));
  CHECK(kv.stats().front().cached == 3);
  feed(kv, 2, iota(40, 70000));  // 2 more blocks: the two least recent cached go
  CHECK(kv.stats().front().cached == 1);
  CHECK(kv.attach_prefix(0, prompt) == 0);  // block 0 of the chain is gone: no hit at all
  CHECK(kv.audit() == "");
}

TEST_CASE("an exhausted pool refuses an append and changes nothing") {
  KVCacheConfig c = config(DType::F16, 256, 64, {0}, 2);
  c.n_blocks = 3;
  KVCache kv(c, host());
  feed(kv, 0, iota(64));
  feed(kv, 1, iota(32));
  const std::vector<int> one{0, 1};
  CHECK_FALSE(kv.fits(one));
  CHECK_THROWS_AS(kv.append(1, 32, 1), Error);
  CHECK(kv.n_tokens(1) == 32);
  CHECK(kv.audit() == "");
}

TEST_CASE("randomized operations keep pool and tables consistent") {
  // Arrivals (with prefix hits), steps, rollbacks, shifts, finishes and cancellations on a
  // small pool; the audit and every sequence's tokens are checked after each operation.
  for (bool swa : {false, true}) {
    CAPTURE(swa);
    ThreadPool pool(1);
    KVCacheConfig c = config(DType::Q8_0, 320, 40, swa ? std::vector<int>{0, 48} : std::vector<int>{0, 0}, 6);
    c.n_blocks = 40;
    c.rollback_tokens = 40;
    KVCache kv(c, host());
    std::mt19937 rng(swa ? 7 : 3);
    std::vector<std::vector<int32_t>> tokens(6);
    const std::vector<int32_t> system = iota(70, 100);  // a shared start some prompts take
    auto rnd = [&](int n) { return static_cast<int>(rng() % n); };
    for (int step = 0; step < 4000; ++step) {
      const int s = rnd(6);
      const int op = rnd(10);
      std::vector<int32_t>& held = tokens[s];
      if (held.empty() && op < 5) {  // arrival
        std::vector<int32_t> prompt = rnd(2) ? system : std::vector<int32_t>{};
        const int extra = 1 + rnd(60);
        for (int i = 0; i < extra; ++i) prompt.push_back(rnd(8));
        const int hit = kv.attach_prefix(s, prompt);
        REQUIRE(hit % 32 == 0);
        held.assign(prompt.begin(), prompt.begin() + hit);
        std::vector<int32_t> rest(prompt.begin() + hit, prompt.end());
        std::vector<int> need(6, 0);
        need[s] = static_cast<int>(rest.size());
        if (kv.fits(need) && held.size() + rest.size() <= 320) {
          feed(kv, s, rest);
          held.insert(held.end(), rest.begin(), rest.end());
        } else {
          kv.clear(s);
          held.clear();
        }
      } else if (!held.empty() && op < 6) {  // decode steps
        const int n = 1 + rnd(4);
        std::vector<int> need(6, 0);
        need[s] = n;
        if (!kv.fits(need) || held.size() + n > 320) continue;
        std::vector<int32_t> more;
        for (int i = 0; i < n; ++i) more.push_back(rnd(8));
        feed(kv, s, more);
        held.insert(held.end(), more.begin(), more.end());
      } else if (!held.empty() && op < 8) {  // rollback (a rejected draft)
        const int n = std::min<int>(static_cast<int>(held.size()), 1 + rnd(12));
        kv.rollback(s, n);
        held.resize(held.size() - n);
      } else if (!held.empty() && op == 8 && held.size() > 40 && rnd(4) == 0) {  // context shift
        const int n_keep = rnd(8), n_discard = 1 + rnd(static_cast<int>(held.size()) - n_keep - 1);
        kv.shift(s, n_keep, n_discard, 64, [](int) { return RopeParams{64, false, 10000.0f, 1.0f}; });
        held.erase(held.begin() + n_keep, held.begin() + n_keep + n_discard);
        kv.commit(s);
      } else if (!held.empty()) {  // finish or cancel
        kv.clear(s);
        held.clear();
      }
      const std::string problem = kv.audit();
      CAPTURE(step);
      REQUIRE(problem == "");
      REQUIRE(kv.n_tokens(s) == static_cast<int>(held.size()));
      if (!swa) REQUIRE(kv.held_tokens(s) == held);
    }
  }
}
