// The batch-invariance checks every mixture-of-experts family runs (test_moe_model.cpp,
// test_gptoss_model.cpp): grouping a step's rows by expert must not change any row's bits.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <map>
#include <span>
#include <vector>

#include "engine/scheduler.h"
#include "models/model_support.h"
#include "models/scheduler_support.h"

namespace ember::test {

// A 60-token sequence prefilled alone against the same sequence fed 7 tokens at a time beside
// two others (5 rows with outputs, 1 without): its logits bitwise equal.
inline void check_logits_alone_equal_batched(const Model& model) {
  const std::vector<int32_t> a = prompt_of(60, 1), other = prompt_of(45, 2);
  ThreadPool pool(2);
  Context solo(model, options(3), pool), mixed(model, options(3), pool);
  const std::vector<float> want = run_batch(solo, a, 0, a.size());
  std::vector<float> got;
  for (size_t begin = 0; begin < a.size(); begin += 7) {
    Batch b;
    for (size_t i = 0; i < 5 && begin / 7 * 5 + i < other.size(); ++i) b.add(other[begin / 7 * 5 + i], -1, 0, true);
    for (size_t i = begin; i < std::min(a.size(), begin + 7); ++i) b.add(a[i], -1, 1, true);
    if (begin < 30) b.add(other[begin], -1, 2, false);
    const std::span<const float> l = mixed.decode(b);
    const size_t n_other = static_cast<size_t>(b.n_outputs()) - std::min<size_t>(7, a.size() - begin);
    got.insert(got.end(), l.begin() + n_other * mixed.n_vocab(), l.end());
  }
  REQUIRE(got.size() == want.size());
  CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
}

// n requests (prompts of 5, 16, 27, ... tokens; greedy and seeded in turn, seeds from
// seed_base) run together by the scheduler, once per step budget: each gets exactly the
// tokens it gets alone.
inline void check_scheduled_equal_alone(const Model& model, int n, uint64_t seed_base,
                                        std::initializer_list<int> batch_tokens) {
  std::vector<SequenceRequest> reqs;
  for (int i = 0; i < n; ++i)
    reqs.push_back(request(prompt_of(5 + 11 * i, i), 10 + 2 * i, i % 2 ? 1.0f : 0.0f, seed_base + i));
  std::vector<std::vector<int32_t>> want;
  for (const SequenceRequest& r : reqs) want.push_back(alone(model, r));
  for (const int tokens : batch_tokens) {
    CAPTURE(tokens);
    ThreadPool pool(2);
    Context ctx(model, options(n), pool);
    std::map<int, std::vector<int32_t>> got;
    Scheduler sched(ctx, SchedulerOptions{n, tokens},
                    Scheduler::Events{[&](int id, int32_t t) { got[id].push_back(t); }, nullptr});
    for (const SequenceRequest& r : reqs) sched.submit(r);
    while (sched.step()) {
    }
    for (size_t i = 0; i < reqs.size(); ++i) {
      CAPTURE(i);
      CHECK(got[static_cast<int>(i)] == want[i]);
    }
  }
}

}  // namespace ember::test
