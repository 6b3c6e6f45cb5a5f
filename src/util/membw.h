// Measures the machine's memory read bandwidth: the ceiling of every memory-bound kernel
// (decode-time matvec reads each weight once per token). Used by `ember bench-ops` and
// `ember bench` to print results as a percentage of what the hardware allows.
#pragma once
#include <cstddef>

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
// threads, `reps` times after one warm-up pass (each time the faster of one and two
// streams per thread), and reports the median. The buffer is on
// the pages the packed weights get (util/stream_buffer.h), so decode meets a like read.
ReadBandwidth measure_read_bandwidth(ThreadPool& pool, size_t bytes = size_t{512} << 20, int reps = 7);

// A short measurement (256 MiB, 3 repetitions: about 40 ms) in GB/s, for benchmarks that take
// one just before and one just after each timed figure, because this kind of machine's
// bandwidth drifts (`ember bench` decode runs, `ember bench-ops` DRAM matvec rows).
double spot_read_bandwidth(ThreadPool& pool);

}  // namespace ember
