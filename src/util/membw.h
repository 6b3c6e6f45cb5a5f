// Measures the machine's memory read bandwidth: the ceiling of every memory-bound kernel
// (decode-time matvec reads each weight once per token). Used by `ember bench-ops` and
// `ember bench` to print results as a percentage of what the hardware allows.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace ember {

class ThreadPool;

struct ReadBandwidth {
  double gb_per_s = 0.0;  // 1e9 bytes per second, median over the repetitions
  double min_gb_per_s = 0.0;
  double max_gb_per_s = 0.0;
  // The same reads timed by each thread's CPU time (slowest thread), median: on a machine
  // busy with other processes this estimates the bandwidth while the threads ran, which
  // wall-clock time cannot (on an idle machine the two agree).
  double cpu_time_gb_per_s = 0.0;
  size_t bytes = 0;       // buffer size read per repetition
  int threads = 0;
};

// Reads a `bytes` buffer (choose it well above the last-level cache) with all of the pool's
// threads, `reps` times after one warm-up pass (each time the fastest of 1, 2, 4 and 8 streams
// per thread), and reports the median. The buffer is on
// the pages the packed weights get (util/stream_buffer.h), so decode meets a like read.
ReadBandwidth measure_read_bandwidth(ThreadPool& pool, size_t bytes = size_t{512} << 20, int reps = 7);

// A read buffer allocated and mapped once, then read on demand. `ember bench` reads it after
// each decode run for as long as that run took: on this kind of VM one 64 MiB read may see
// 18 GB/s and the next 45, so only a reference that averages over the same stretch of time
// as the run (and just next to it) is a fair measure of what the run could have read.
class BandwidthProbe {
 public:
  explicit BandwidthProbe(ThreadPool& pool, size_t bytes = size_t{256} << 20);
  ~BandwidthProbe();
  BandwidthProbe(const BandwidthProbe&) = delete;
  BandwidthProbe& operator=(const BandwidthProbe&) = delete;

  // One pass over the buffer with `streams` streams per thread: GB/s by the wall clock, and
  // by the slowest thread's CPU time.
  struct Rate {
    double wall = 0.0, cpu = 0.0;
  };
  Rate pass(int streams);
  // The fastest (by the wall clock) of passes with 1, 2, 4 and 8 streams per thread:
  // the reference is the best these reads reach, so a kernel's share of it is not flattered
  // by a slow pattern.
  Rate best_pass();
  // Mean GB/s of best_pass() over at least `seconds` (and at least one best_pass()).
  double gb_per_s_over(double seconds);
  size_t bytes() const;

 private:
  ThreadPool& pool_;
  std::shared_ptr<uint8_t> storage_;
  size_t words_ = 0;
  std::vector<uint64_t> sinks_;       // one cache line per thread
  std::vector<double> cpu_seconds_;   // one cache line per thread
};


}  // namespace ember
