// The ring KV cache on its own: slots, capacities, rollback limits, clear, shift.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/thread_pool.h"
#include "backend/ops.h"
#include "kv/kv_cache.h"
#include "util/error.h"

using namespace ember;

namespace {

KVCacheConfig config(DType type, int n_ctx, int n_ubatch, std::vector<int> window) {
  KVCacheConfig c;
  c.n_layer = static_cast<int>(window.size());
  c.n_seq = 2;
  c.n_ctx = n_ctx;
  c.n_ubatch = n_ubatch;
  c.k_row = 64;
  c.v_row = 64;
  c.k_type = type;
  c.v_type = type;
  c.window = std::move(window);
  return c;
}

}  // namespace

TEST_CASE("ring capacities: n_ctx for global layers, window + ubatch for local ones") {
  KVCache kv(config(DType::F16, 100, 8, {0, 16, 200}));
  CHECK(kv.capacity(0) == 100);
  CHECK(kv.capacity(1) == 24);
  CHECK(kv.capacity(2) == 100);  // a window wider than the context is the context
  CHECK(kv.bytes_per_token() == 3 * 2 * 64 * 2);
  CHECK(kv.total_bytes() == KVCache::bytes_for(kv.config()));
}

TEST_CASE("KV bytes per token per type") {
  for (auto [type, bytes] : {std::pair{DType::F32, 256}, {DType::F16, 128}, {DType::Q8_0, 68}, {DType::Q4_0, 36}}) {
    KVCache kv(config(type, 16, 4, {0}));
    CHECK(kv.bytes_per_token() == 2 * static_cast<size_t>(bytes));
  }
  CHECK_THROWS_AS(KVCache(config(DType::Q4_K, 16, 4, {0})), Error);
}

TEST_CASE("append, view positions, rollback and clear per sequence") {
  KVCache kv(config(DType::F32, 32, 4, {0, 8}));
  for (int p = 0; p < 20; ++p) kv.append(0, p);
  for (int p = 0; p < 3; ++p) kv.append(1, p);
  CHECK(kv.n_tokens(0) == 20);
  CHECK(kv.n_tokens(1) == 3);
  // The local ring (12 slots) holds the last 12 positions.
  const KVView local = kv.view(1, 0);
  std::vector<int> held;
  for (int s = 0; s < local.n_slots; ++s)
    if (local.slot_pos[s] >= 0) held.push_back(local.slot_pos[s]);
  std::sort(held.begin(), held.end());
  CHECK(held.size() == 12);
  CHECK(held.front() == 8);
  CHECK(held.back() == 19);
  // Rollback within the ubatch slack (window 8, capacity 12: up to 5 tokens) is exact.
  kv.rollback(0, 5);
  CHECK(kv.next_pos(0) == 15);
  CHECK_THROWS_AS(kv.rollback(0, 5), Error);  // position 15's window would need 8..14, 7 was lost
  kv.clear(0);
  CHECK(kv.n_tokens(0) == 0);
  CHECK(kv.n_tokens(1) == 3);
  for (int s = 0; s < kv.view(0, 0).n_slots; ++s) CHECK(kv.view(0, 0).slot_pos[s] == -1);
}

TEST_CASE("shift re-rotates kept keys to their new positions") {
  // Keys are RoPE(base_t, pos) rows; after dropping tokens the survivors must equal
  // RoPE(base_t, pos - n_discard), in the global and in the wrapped sliding ring.
  ThreadPool pool(1);
  KVCache kv(config(DType::F32, 40, 4, {0, 8}));
  const int64_t row = 64;
  RopeParams rp;
  rp.n_rot = 32;
  rp.neox = true;
  rp.freq_base = 10000.0f;
  auto base_row = [&](int t, std::vector<float>& out) {
    out.resize(row);
    for (int64_t j = 0; j < row; ++j) out[j] = std::sin(0.37f * t + 0.11f * j);
  };
  auto roped = [&](int t, int pos) {
    std::vector<float> r;
    base_row(t, r);
    int32_t p = pos;
    ops::rope(pool, F32Mat{r.data(), row, 1, row}, 32, &p, rp);
    return r;
  };
  for (int t = 0; t < 40; ++t) {
    auto slot = kv.append(0, t);
    for (int il = 0; il < 2; ++il) {
      auto r = roped(t, t);
      ops::store_row(r.data(), row, DType::F32, kv.k_row(il, 0, slot));
    }
  }
  const int n_keep = 4, n_discard = 18;
  kv.shift(pool, 0, n_keep, n_discard, [&](int, F32Mat rows, const int32_t* delta) {
    ops::rope(pool, rows, 32, delta, rp);
  });
  CHECK(kv.n_tokens(0) == 40 - n_discard);
  for (int il = 0; il < 2; ++il) {
    const KVView v = kv.view(il, 0);
    int checked = 0;
    double worst = 0;
    for (int s = 0; s < v.n_slots; ++s) {
      const int p = v.slot_pos[s];
      if (p < 0) continue;
      const int t = p < n_keep ? p : p + n_discard;  // the token that now sits at position p
      const auto want = roped(t, p);
      const float* got = reinterpret_cast<const float*>(static_cast<const uint8_t*>(v.k) + s * v.k_row_bytes);
      for (int64_t j = 0; j < row; ++j) worst = std::max(worst, std::fabs(static_cast<double>(got[j]) - want[j]));
      ++checked;
    }
    CHECK(checked == (il == 0 ? 22 : 12));
    CHECK(worst < 1e-4);
  }
  // Appending continues at the new position in both rings.
  CHECK(kv.append(0, 22).index == 22);
}
