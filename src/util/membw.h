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

// The read patterns of the reference. Bandwidth is what a read can reach, and which read
// reaches most differs by machine, so the reference is the best of these over each run
// (eval::segment_reference), and `ember bench` names the one that won.
//  - k streams: each thread reads a fixed share of one buffer as k far-apart streams in
//    lockstep. On this project's Zen 3 VM a thread reads faster with more of them (256 MiB,
//    2 threads, 8 alternated passes: 1 stream 18-26 GB/s, 2 streams 23-29, 4 streams 26-33,
//    8 streams 21-37, 16 streams 21-31). 1 stream is the plain multi-threaded sum.
//  - decode's chunks: the decode step's own walk. The buffer is cut into a transformer
//    layer's matrices (TinyLlama's shapes at Q4_0), read by one pool run per matmul dispatch
//    (q+k+v, o, gate+up, down), each run's matrices, end to end, cut into guided chunks taken from a
//    shared counter (util/guided_chunks.h, as ops::matmul does), each chunk read as two
//    streams, its halves, as the packed kernels' decode walk pairs groups (packed_tiles.h).
//    It pays what decode pays for its shape: a dispatch per op, chunks that end, threads
//    that wait for the last chunk. So it is the peak decode's own walk reaches with the same
//    threads, and any of the others above it is bandwidth a decode loop could reach only
//    with another walk.
// Why the best of all five and not decode's walk alone: the reference must be a rate a read
// with the same threads really reached (else "% of roofline" flatters), and no lower than
// what decode's own walk reaches (else decode could pass 100% by its walk, not its kernels).
// The best of the five is both; when a fixed-share read beats decode's walk, the difference
// is the cost of decode's shape (dispatches, chunk tails), and it rightly shows as a loss.
// Which read wins differs by machine (more streams help on the Zen 3 VM above, not on the
// Sapphire Rapids VM of issue 32, loaded: 2 threads, 9 rounds, medians 1 stream 5.6 GB/s,
// 2 streams 6.1, 4 streams 4.9, 8 streams 5.0, decode's chunks 5.8), so `ember bench` names
// the pattern that set each run's reference.
struct ReadPattern {
  int streams = 1;
  bool decode_chunks = false;
  const char* name = "";
};
inline constexpr std::array<ReadPattern, 5> kReadPatterns = {{
    {1, false, "1 stream per thread"},
    {2, false, "2 streams per thread"},
    {4, false, "4 streams per thread"},
    {8, false, "8 streams per thread"},
    {2, true, "decode's chunks, 2 streams each"},
}};
// GB/s of each pattern of kReadPatterns.
using PatternRates = std::array<double, kReadPatterns.size()>;
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
  const char* pattern = "";  // kReadPatterns' name of the pattern reported
  PatternRates pattern_gb_per_s{};  // each pattern's median
  size_t bytes = 0;       // buffer size read per repetition
  int threads = 0;
};

// Reads a `bytes` buffer (choose it well above the last-level cache) with all of the pool's
// threads, `reps` times with each pattern of kReadPatterns after one warm-up round, and
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

  // One pass over the buffer in `pattern`: GB/s by the wall clock, and by the CPU time of the
  // slowest share of the pool's runs.
  struct Rate {
    double wall = 0.0, cpu = 0.0;
    double bytes = 0.0, seconds = 0.0;  // read, and wall-clock time taken
  };
  Rate pass(const ReadPattern& pattern);
  // One pass with each pattern of kReadPatterns, in turn.
  std::array<Rate, kReadPatterns.size()> pattern_passes();
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

  void read_fixed_shares(int streams);
  void read_decode_chunks();
  size_t decode_words_ = 0;  // words the last decode-chunks pass read (whole chunk units)
};


}  // namespace ember
