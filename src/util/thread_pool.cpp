#include "util/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define EMBER_CPU_RELAX() _mm_pause()
#else
#define EMBER_CPU_RELAX() ((void)0)
#endif

namespace ember {

namespace {
constexpr int kSpinIterations = 1 << 14;  // ~ tens of microseconds before sleeping
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

int ThreadPool::default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  pending_.store(n_threads_ - 1, std::memory_order_release);
  generation_.fetch_add(generation_.load(std::memory_order_relaxed) % 2 == 0 ? 2 : 1, std::memory_order_acq_rel);
  generation_.notify_all();
  fn(0, n_threads_);
  // Wait for the workers: they usually finish within the same op, so spin first; on an
  // oversubscribed machine a worker may be descheduled, and spinning would then only burn
  // the time slice it needs, so fall back to sleeping on the counter.
  int left = pending_.load(std::memory_order_acquire);
  for (int spin = 0; left != 0 && spin < kSpinIterations; ++spin) {
    EMBER_CPU_RELAX();
    left = pending_.load(std::memory_order_acquire);
  }
  while (left != 0) {
    pending_.wait(left, std::memory_order_acquire);
    left = pending_.load(std::memory_order_acquire);
  }
  job_ = nullptr;
}

void ThreadPool::for_each_index(int64_t n, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  if (n_threads_ == 1 || n == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  index_job_ = &fn;
  n_indices_ = n;
  next_index_.store(0, std::memory_order_relaxed);
  open_.store(true, std::memory_order_seq_cst);  // publishes the job to the workers that see it open
  generation_.fetch_add(generation_.load(std::memory_order_relaxed) % 2 == 1 ? 2 : 1, std::memory_order_acq_rel);
  generation_.notify_all();
  claim_indices();
  // Every index is claimed: close the job, then wait for the workers inside it. A worker
  // counts itself in before it looks at open_, and the caller closes before it reads the
  // count (both seq_cst), so a worker either is waited for or sees the job closed.
  open_.store(false, std::memory_order_seq_cst);
  int inside = inside_.load(std::memory_order_seq_cst);
  for (int spin = 0; inside != 0 && spin < kSpinIterations; ++spin) {
    EMBER_CPU_RELAX();
    inside = inside_.load(std::memory_order_seq_cst);
  }
  while (inside != 0) {
    inside_.wait(inside, std::memory_order_seq_cst);
    inside = inside_.load(std::memory_order_seq_cst);
  }
  index_job_ = nullptr;
}

void ThreadPool::claim_indices() {
  for (int64_t i = next_index_.fetch_add(1, std::memory_order_relaxed); i < n_indices_;
       i = next_index_.fetch_add(1, std::memory_order_relaxed))
    (*index_job_)(i);
}

void ThreadPool::join_index_job() {
  inside_.fetch_add(1, std::memory_order_seq_cst);
  // Open: the job the caller published is still being claimed (whichever generation this
  // worker woke for: a later job's state is complete once it is open, and its caller waits
  // for this worker too). Closed: nothing left to do.
  if (open_.load(std::memory_order_seq_cst)) claim_indices();
  if (inside_.fetch_sub(1, std::memory_order_seq_cst) == 1) inside_.notify_one();
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
  for_each_index(parts, [&](int64_t part) {
    const int64_t begin = n * part / parts, end = n * (part + 1) / parts;
    if (begin < end) fn(begin, end);
  });
}

void ThreadPool::worker_loop(int ith) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < kSpinIterations; ++spin) {
      EMBER_CPU_RELAX();
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      continue;
    }
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    if (gen % 2 == 1) {
      join_index_job();
      continue;
    }
    (*job_)(ith, n_threads_);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace ember
