// Measures the machine's memory read bandwidth: the ceiling of every memory-bound kernel
// (decode-time matvec reads each weight once per token). Used by `ember bench-ops` and
// `ember bench` to print results as a percentage of what the hardware allows.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace ember {

class ThreadPool;

// The read patterns of the reference: far-apart streams per thread. On this project's Zen 3
// VM a thread reads faster with more of them (256 MiB, 2 threads, 8 alternated passes:
// 1 stream 18-26 GB/s, 2 streams 23-29, 4 streams 26-33, 8 streams 21-37, 16 streams
// 21-31), and the decode kernels read two per thread.
inline constexpr std::array<int, 4> kReadStreams = {1, 2, 4, 8};
// GB/s of each pattern of kReadStreams.
using PatternRates = std::array<double, kReadStreams.size()>;
// The rates in bytes/s, as eval::DecodeSegment holds them.
std::vector<double> bytes_per_s(const PatternRates& rates);

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
// threads, `reps` times with each pattern of kReadStreams after one warm-up round, and
// reports the pattern whose median is the highest. The buffer is on the pages the packed
// weights get (util/stream_buffer.h), so decode meets a like read.
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
  // One pass with each pattern of kReadStreams, in turn.
  std::array<Rate, kReadStreams.size()> pattern_passes();
  // Each pattern's GB/s over at least `seconds` of pattern_passes() (at least one round):
  // its bytes over its time, the patterns taking turns so that all meet the same machine.
  // The reference is then the best *pattern* over a run (eval::segment_reference), not the
  // fastest pass of each round: passes of one pattern spread by +-15% on this VM, and the
  // fastest of four in every round measured lucky moments, 3-8% above what any one pattern
  // sustained in the same windows (tg128, 2 threads) -- a rate no kernel can choose to read at.
  PatternRates gb_per_s_over(double seconds);
  size_t bytes() const;

 private:
  ThreadPool& pool_;
  std::shared_ptr<uint8_t> storage_;
  size_t words_ = 0;
  std::vector<uint64_t> sinks_;       // one cache line per thread
  std::vector<double> cpu_seconds_;   // one cache line per thread
};


}  // namespace ember
