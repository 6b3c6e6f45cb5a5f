// util/thread_pool: every share of a run runs exactly once and is finished when run()
// returns, whichever thread takes it (the caller takes the shares no worker has started);
// for_each_index runs each index once, whatever the mix of calls in a row and however many
// more threads than cores (late workers then meet later jobs); parallel_for covers its range
// once; workers that went to sleep wake for the next run; a
// pool is destroyed cleanly whether its workers spin or sleep.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "util/thread_pool.h"

using ember::ThreadPool;

TEST_CASE("thread pool: each share of a run runs once and is done when run returns") {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    CHECK(pool.size() == threads);
    std::vector<int> seen(threads);  // plain ints: run() returning must publish the shares' writes
    for (int r = 0; r < 3000; ++r) {
      std::fill(seen.begin(), seen.end(), 0);
      std::atomic<int> calls{0};
      pool.run([&](int ith, int nth) {
        REQUIRE(nth == threads);
        REQUIRE(ith >= 0);
        REQUIRE(ith < nth);
        seen[ith] += r + 1;
        calls.fetch_add(1);
      });
      REQUIRE(calls.load() == threads);
      for (int i = 0; i < threads; ++i) REQUIRE(seen[i] == r + 1);
    }
  }
}

TEST_CASE("thread pool: shares of uneven length, taken by whichever thread is free") {
  // Random sleeps stand in for descheduled threads: the caller often finishes first and
  // takes shares a worker has not started, while a worker may still hold one.
  ThreadPool pool(4);
  std::mt19937 rng(7);
  const std::thread::id caller = std::this_thread::get_id();
  int caller_took_other_share = 0;
  for (int r = 0; r < 200; ++r) {
    std::vector<int> us(4);
    for (int& u : us) u = static_cast<int>(rng() % 300);
    std::vector<int> done(4, 0);
    std::vector<std::thread::id> who(4);
    pool.run([&](int ith, int) {
      std::this_thread::sleep_for(std::chrono::microseconds(us[ith]));
      who[ith] = std::this_thread::get_id();
      done[ith] = 1;
    });
    for (int i = 0; i < 4; ++i) REQUIRE(done[i] == 1);
    CHECK(who[0] == caller);  // share 0 is always the caller's own
    for (int i = 1; i < 4; ++i) caller_took_other_share += who[i] == caller;
  }
  MESSAGE("shares 1-3 the caller ran itself: ", caller_took_other_share, " of 600");
}

TEST_CASE("thread pool: parallel_for covers the range once") {
  ThreadPool pool(3);
  for (int64_t n : {0, 1, 2, 3, 7, 100, 1001}) {
    for (int64_t grain : {1, 4, 64}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
        REQUIRE(b < e);
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) REQUIRE(hits[static_cast<size_t>(i)].load() == 1);
    }
  }
}

TEST_CASE("thread pool: sleeping workers wake for the next run, and the pool shuts down") {
  for (int pause_ms : {0, 20}) {
    ThreadPool pool(3);
    for (int r = 0; r < 5; ++r) {
      std::atomic<int> calls{0};
      pool.run([&](int, int) { calls.fetch_add(1); });
      CHECK(calls.load() == 3);
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));  // past the spin: workers sleep
    }
  }
  ThreadPool unused(4);  // destroyed without a run
}

TEST_CASE("thread pool: destroyed right after runs the caller finished alone") {
  // Workers still asleep or late when share 0 ends leave their shares to the caller; a worker
  // then wakes to a run that is over, or to the destructor's, and must see which.
  for (int i = 0; i < 300; ++i) {
    ThreadPool pool(3);
    for (int r = 0; r < 1 + i % 3; ++r) {
      std::atomic<int> calls{0};
      pool.run([&](int, int) { calls.fetch_add(1); });
      REQUIRE(calls.load() == 3);
    }
    if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

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
