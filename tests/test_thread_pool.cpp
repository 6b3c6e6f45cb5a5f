// The thread pool's three ways to run work: run() (every thread once), for_each_index()
// (indices claimed from a counter; late workers skip) and parallel_for() (ranges on top of
// it). Each index and item must run exactly once, whatever the mix of calls in a row and
// however many more threads than cores (late workers then meet later jobs).
#include <doctest/doctest.h>

#include <atomic>
#include <vector>

#include "util/thread_pool.h"

using namespace ember;

TEST_CASE("for_each_index runs every index exactly once, between run() and parallel_for calls") {
  for (int n_threads : {1, 2, 3, 8}) {
    ThreadPool pool(n_threads);
    for (int rep = 0; rep < 300; ++rep) {
      const int64_t n = rep % 7 == 0 ? 0 : (rep * 37) % 301;
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.for_each_index(n, [&](int64_t i) { hits[i].fetch_add(1, std::memory_order_relaxed); });
      for (int64_t i = 0; i < n; ++i) REQUIRE_MESSAGE(hits[i].load() == 1, "threads ", n_threads, " n ", n, " index ", i);

      if (rep % 3 == 0) {  // a run() in between: every thread exactly once
        std::vector<std::atomic<int>> seen(static_cast<size_t>(n_threads));
        pool.run([&](int ith, int nth) {
          CHECK(nth == n_threads);
          seen[ith].fetch_add(1, std::memory_order_relaxed);
        });
        for (int t = 0; t < n_threads; ++t) REQUIRE(seen[t].load() == 1);
      }
      std::vector<std::atomic<int>> covered(static_cast<size_t>(n));
      pool.parallel_for(n, 4, [&](int64_t begin, int64_t end) {
        CHECK(begin < end);
        for (int64_t i = begin; i < end; ++i) covered[i].fetch_add(1, std::memory_order_relaxed);
      });
      for (int64_t i = 0; i < n; ++i) REQUIRE(covered[i].load() == 1);
    }
  }
}

TEST_CASE("for_each_index: the results are complete when the call returns, whoever ran them") {
  ThreadPool pool(4);
  std::vector<int64_t> out(1000);
  for (int rep = 0; rep < 200; ++rep) {
    pool.for_each_index(static_cast<int64_t>(out.size()), [&](int64_t i) { out[i] = i * rep; });
    int64_t wrong = 0;
    for (size_t i = 0; i < out.size(); ++i) wrong += out[i] != static_cast<int64_t>(i) * rep;
    REQUIRE(wrong == 0);
  }
}
