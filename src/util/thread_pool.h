// A persistent pool of worker threads for the CPU ops. A decode step runs hundreds of ops,
// so dispatch must be cheap: workers spin briefly on a generation counter before sleeping
// (std::atomic::wait, a futex on Linux), and the calling thread does a share of the work.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace ember {

class ThreadPool {
 public:
  // n_threads counts the caller: ThreadPool(1) runs everything inline.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(ith, nth) once on each of the nth = size() threads (the caller is ith 0) and
  // returns when all have finished. Not reentrant: ops must not call run() from inside fn.
  void run(const std::function<void(int ith, int nth)>& fn);

  // Splits [0, n) into size() contiguous ranges, at least `grain` items each, and runs
  // fn(begin, end) on them in parallel.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

  // The default thread count: physical cores as far as we can tell (hardware_concurrency).
  static int default_threads();

 private:
  void worker_loop(int ith);

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace ember
