// A persistent pool of worker threads for the CPU ops. A decode step runs hundreds of ops,
// so dispatch must be cheap: workers spin briefly on a generation counter before sleeping
// (std::atomic::wait, a futex on Linux), and the calling thread does a share of the work.
// On a busy machine a worker may wake a time slice late: the ops therefore run on
// for_each_index, where the threads that are there claim the work and a late one skips it,
// rather than on run(), whose every call waits for every thread.
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

  // Runs fn(i) once for every i in [0, n) on whichever threads come: the caller and the
  // workers claim indices from a shared counter, and the call returns once every index is
  // done. A worker that has not started by then (descheduled on a busy machine) skips the
  // job rather than hold the caller at a barrier, so fn must not depend on which thread
  // runs an index. Not reentrant either.
  void for_each_index(int64_t n, const std::function<void(int64_t i)>& fn);

  // Splits [0, n) into at most size() contiguous ranges, at least `grain` items each, and
  // runs fn(begin, end) on them in parallel (through for_each_index: any thread may run a range).
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

  // The default thread count: physical cores as far as we can tell (hardware_concurrency).
  static int default_threads();

 private:
  void worker_loop(int ith);
  void claim_indices();
  void join_index_job();

  // A generation's low bit says which kind of job it starts: 0 run(), 1 for_each_index().

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  // for_each_index: the job, the next index to claim, whether claiming is still open, and
  // how many workers are inside the job (the caller waits for those only).
  const std::function<void(int64_t)>* index_job_ = nullptr;
  int64_t n_indices_ = 0;
  std::atomic<int64_t> next_index_{0};
  std::atomic<bool> open_{false};
  std::atomic<int> inside_{0};
};

}  // namespace ember
