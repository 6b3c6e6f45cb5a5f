// util/thread_pool: every share of a run runs exactly once and is finished when run()
// returns, whichever thread takes it (the caller takes the shares no worker has started);
// parallel_for covers its range once; workers that went to sleep wake for the next run; a
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
