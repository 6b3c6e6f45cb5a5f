// A persistent pool of worker threads for the CPU ops. A decode step runs hundreds of ops,
// so dispatch must be cheap: workers spin briefly on the pool's state before sleeping
// (std::atomic::wait, a futex on Linux), and the calling thread does a share of the work.
//
// The shares of a run are handed out from a counter, not tied to threads: whichever thread
// comes first takes the next share, and the caller, once its own share is done, takes every
// share no worker has started. A worker the OS has descheduled (a busy machine: another
// process on its core) then costs the op nothing, where a barrier waiting for each worker
// would stall the whole step until the worker ran again.
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

  // Runs fn(ith, nth) once for each share ith of nth = size() and returns when all have
  // finished. The caller runs share 0 and any share no worker took in time, so a share's
  // thread is not fixed: fn must not depend on which thread runs it (thread_local scratch is
  // fine). Not reentrant: ops must not call run() from inside fn.
  void run(const std::function<void(int ith, int nth)>& fn);

  // Splits [0, n) into size() contiguous ranges, at least `grain` items each, and runs
  // fn(begin, end) on them in parallel.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

  // The default thread count: physical cores as far as we can tell (hardware_concurrency).
  static int default_threads();

 private:
  void worker_loop();
  // Takes the next share of the current run, or returns -1 when none is left (or when `state`
  // is stale). `state` is the value last read from state_.
  int take_share(uint64_t& state);
  void finish_share();

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  // The run's generation (high bits) and its next share to hand out (low kShareBits), in one
  // word so that a worker holding a stale value cannot take a share of a later run.
  std::atomic<uint64_t> state_{0};
  std::atomic<int> pending_{0};  // shares 1.. of the current run not finished yet
  std::atomic<bool> stop_{false};
};

}  // namespace ember
