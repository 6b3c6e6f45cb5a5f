#include "util/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define EMBER_CPU_RELAX() _mm_pause()
#else
#define EMBER_CPU_RELAX() ((void)0)
#endif

namespace ember {

namespace {

constexpr int kShareBits = 16;
constexpr uint64_t kShareMask = (uint64_t{1} << kShareBits) - 1;
constexpr int kMaxThreads = 1 << (kShareBits - 1);

// How long a thread spins on the pool's state before it sleeps on it. Ops of one decode step
// follow each other within microseconds, so a spin this long keeps an idle machine's workers
// awake for the whole step; on a busy machine a thread that has nothing to do gives its core
// back soon, to the thread it is waiting for among others. A time, not a count of pauses:
// one `pause` takes 10 cycles on some x86 cores and 140 on others.
constexpr auto kSpinTime = std::chrono::microseconds(50);

// Waits until `a` no longer holds `old` and returns its new value: spins for kSpinTime, then
// sleeps until a notify.
template <typename T>
T await_change(const std::atomic<T>& a, T old) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    const T v = a.load(std::memory_order_acquire);
    if (v != old) return v;
    EMBER_CPU_RELAX();
    if (i % 64 == 0 && std::chrono::steady_clock::now() - t0 > kSpinTime) break;
  }
  for (;;) {
    a.wait(old, std::memory_order_acquire);
    const T v = a.load(std::memory_order_acquire);
    if (v != old) return v;
  }
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::clamp(n_threads, 1, kMaxThreads)) {
  state_.store(static_cast<uint64_t>(n_threads_), std::memory_order_relaxed);  // run 0, no share left
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  // A new generation with no share to take: every worker sees the state change, then stop_.
  const uint64_t gen = (state_.load(std::memory_order_relaxed) >> kShareBits) + 1;
  state_.store(gen << kShareBits | static_cast<uint64_t>(n_threads_), std::memory_order_release);
  state_.notify_all();
  for (auto& t : workers_) t.join();
}

int ThreadPool::default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

int ThreadPool::take_share(uint64_t& state) {
  for (;;) {
    const int share = static_cast<int>(state & kShareMask);
    if (share >= n_threads_) return -1;
    // Success proves the run `state` names is still going (its shares are not all finished),
    // so job_ is its job: the acquire pairs with run()'s release of the state.
    if (state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel, std::memory_order_acquire))
      return share;
  }
}

void ThreadPool::finish_share() {
  if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  const uint64_t gen = (state_.load(std::memory_order_relaxed) >> kShareBits) + 1;
  state_.store(gen << kShareBits | 1, std::memory_order_release);  // share 0 is the caller's
  state_.notify_all();
  fn(0, n_threads_);
  // The shares no worker has taken yet: a worker that is not running now would only make
  // everyone wait for it.
  uint64_t state = state_.load(std::memory_order_acquire);
  for (int share = take_share(state); share >= 0; share = take_share(state)) {
    fn(share, n_threads_);
    finish_share();
  }
  // The shares workers took: they are running, so wait for them, spinning a little first.
  for (int left = pending_.load(std::memory_order_acquire); left != 0;) left = await_change(pending_, left);
  job_ = nullptr;
}

void ThreadPool::for_each_index(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  if (n_threads_ == 1 || n == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  // One captured pointer keeps the lambda within std::function's inline storage: no heap
  // allocation per call on the decode path.
  struct Job {
    std::atomic<int64_t> next{0};
    int64_t n;
    const std::function<void(int64_t)>& fn;
  } job{0, n, fn};
  run([j = &job](int, int) {
    for (int64_t i = j->next.fetch_add(1, std::memory_order_relaxed); i < j->n;
         i = j->next.fetch_add(1, std::memory_order_relaxed))
      j->fn(i);
  });
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  int64_t max_parts = (n + grain - 1) / grain;
  int parts = static_cast<int>(std::min<int64_t>(n_threads_, max_parts));
  if (parts <= 1) {
    fn(0, n);
    return;
  }
  run([&](int ith, int) {
    if (ith >= parts) return;
    int64_t begin = n * ith / parts;
    int64_t end = n * (ith + 1) / parts;
    if (begin < end) fn(begin, end);
  });
}

void ThreadPool::worker_loop() {
  uint64_t state = state_.load(std::memory_order_acquire);
  for (;;) {
    const int share = take_share(state);
    if (share >= 0) {
      (*job_)(share, n_threads_);
      finish_share();
      state = state_.load(std::memory_order_acquire);
      continue;
    }
    // No share left in `state`, the latest value seen: stop if the destructor stored it (it
    // sets stop_ first), else wait for the next run.
    if (stop_.load(std::memory_order_acquire)) return;
    state = await_change(state_, state);
  }
}

}  // namespace ember
