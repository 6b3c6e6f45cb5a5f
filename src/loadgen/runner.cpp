#include "loadgen/runner.h"

#include <atomic>
#include <mutex>
#include <semaphore>
#include <thread>

namespace ember::loadgen {
namespace {

void raise_to(std::atomic<int>& peak, int value) {
  int prev = peak.load();
  while (prev < value && !peak.compare_exchange_weak(prev, value)) {
  }
}

}  // namespace

RunOutcome run_schedule(const std::vector<double>& arrivals_s, int max_concurrency, const SendFn& send,
                        const ProgressFn& progress) {
  const size_t n = arrivals_s.size();
  RunOutcome out;
  out.results.resize(n);
  std::counting_semaphore<> slots(max_concurrency > 0 ? max_concurrency : static_cast<std::ptrdiff_t>(n) + 1);
  std::atomic<int> in_flight{0}, peak{0};
  std::mutex progress_mutex;
  size_t done = 0;
  std::vector<std::thread> threads;
  threads.reserve(n);

  const Clock::time_point start = Clock::now();
  for (size_t i = 0; i < n; ++i) {
    std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(arrivals_s[i])));
    slots.acquire();
    threads.emplace_back([&, i] {
      raise_to(peak, ++in_flight);
      out.results[i] = send(i);
      --in_flight;
      slots.release();
      const std::lock_guard lock(progress_mutex);
      ++done;
      if (progress) progress(done);
    });
  }
  for (std::thread& t : threads) t.join();
  out.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  out.peak_concurrency = peak.load();
  return out;
}

}  // namespace ember::loadgen
