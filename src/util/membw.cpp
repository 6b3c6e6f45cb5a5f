#include "util/membw.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "util/guided_chunks.h"
#include "util/thread_pool.h"
#include "util/error.h"
#include "util/stream_buffer.h"

namespace ember {

namespace {

// Sums 64-bit words with 8 independent accumulators so the loop is bound by loads, not by
// an add chain; the compiler turns it into vector loads. With `streams` > 1 the range is
// read as that many equal parts in lockstep, 64 bytes from each in turn: the hardware
// prefetchers and DRAM banks then serve several streams at once, as they do for kernels
// that read several row groups together (some read faster that way than one stream allows). The
// result is returned so the reads cannot be optimised away.
uint64_t read_words(const uint64_t* p, size_t n, int streams) {
  const size_t part = n / streams / 8 * 8;
  uint64_t acc[8] = {};
  for (size_t i = 0; i < part; i += 8)
    for (int s = 0; s < streams; ++s)
      for (int j = 0; j < 8; ++j) acc[j] += p[s * part + i + j];
  for (size_t i = part * streams; i < n; ++i) acc[0] += p[i];
  uint64_t s = 0;
  for (uint64_t a : acc) s += a;
  return s;
}

double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

BandwidthProbe::BandwidthProbe(ThreadPool& pool, size_t bytes)
    : pool_(pool),
      // The same kind of memory as the packed weights, so decode is compared with a like read.
      storage_(allocate_stream_buffer(bytes / sizeof(uint64_t) * sizeof(uint64_t))),
      words_(bytes / sizeof(uint64_t)),
      sinks_(static_cast<size_t>(pool.size()) * 8),
      cpu_seconds_(static_cast<size_t>(pool.size()) * 8) {
  if (!storage_) fail(ErrorKind::OutOfMemory, "memory bandwidth: cannot allocate a {} byte buffer", bytes);
  uint64_t* const buf = reinterpret_cast<uint64_t*>(storage_.get());
  // First touch from the pool, so pages are mapped (and spread over the threads' NUMA nodes).
  pool_.run([&](int ith, int n) {
    const size_t b = words_ * ith / n, e = words_ * (ith + 1) / n;
    for (size_t i = b; i < e; ++i) buf[i] = i;
  });
}

BandwidthProbe::~BandwidthProbe() {
  uint64_t sink = 0;
  for (uint64_t v : sinks_) sink += v;
  [[maybe_unused]] static volatile uint64_t observed;  // keeps the reads observable
  observed = sink;
}

size_t BandwidthProbe::bytes() const { return words_ * sizeof(uint64_t); }

void BandwidthProbe::read_fixed_shares(int streams) {
  const uint64_t* const buf = reinterpret_cast<const uint64_t*>(storage_.get());
  pool_.run([&](int ith, int n) {
    const size_t b = words_ * ith / n, e = words_ * (ith + 1) / n;
    const double c0 = thread_cpu_seconds();
    sinks_[static_cast<size_t>(ith) * 8] += read_words(buf + b, e - b, streams);
    cpu_seconds_[static_cast<size_t>(ith) * 8] += thread_cpu_seconds() - c0;
  });
}

namespace {

// decode's chunks (membw.h): a TinyLlama layer's matrices at Q4_0 in KiB (q, k, v, o, gate,
// up, down), the matrices [first, last) of each of decode's matmul dispatches over them, and
// the unit of its chunks, a row group of the AVX2 Q4_0 kernel (16 rows of 2048).
constexpr size_t kLayerMatrixKiB[] = {2304, 288, 288, 2304, 6336, 6336, 6336};
constexpr int kLayerDispatches[][2] = {{0, 3}, {3, 4}, {4, 6}, {6, 7}};
constexpr size_t kChunkUnitWords = 18 * 1024 / sizeof(uint64_t);

// One dispatch: its matrices' units end to end, cut into guided chunks (as ops::matmul
// does), taken in order from a shared counter by all threads.
struct ChunkedDispatch {
  static constexpr int kMaxMatrices = 3;
  const uint64_t* base[kMaxMatrices] = {};
  int64_t units[kMaxMatrices] = {};
  int n_matrices = 0;
  GuidedPieces plan;

  // Reads chunk `ch`, each of its pieces as two streams; false past the last.
  bool read_chunk(int ch, uint64_t& sink) const {
    if (ch >= plan.chunks()) return false;
    for (int i = plan.chunk_first[ch]; i < plan.chunk_first[ch + 1]; ++i) {
      const ChunkPiece& piece = plan.pieces[i];
      sink += read_words(base[piece.part] + piece.begin * kChunkUnitWords,
                         static_cast<size_t>(piece.end - piece.begin) * kChunkUnitWords, 2);
    }
    return true;
  }
};

}  // namespace

void BandwidthProbe::read_decode_chunks() {
  const uint64_t* const buf = reinterpret_cast<const uint64_t*>(storage_.get());
  constexpr int64_t kUnitWork[ChunkedDispatch::kMaxMatrices] = {1, 1, 1};
  size_t offset = 0;  // words
  for (bool more = true; more;) {
    for (const auto& range : kLayerDispatches) {
      ChunkedDispatch d;
      for (int m = range[0]; m < range[1]; ++m) {
        const size_t units = std::min(kLayerMatrixKiB[m] * 1024 / sizeof(uint64_t), words_ - offset) / kChunkUnitWords;
        if (units == 0) {
          more = false;  // the buffer's end: a short last matrix, then no more dispatches
          break;
        }
        d.base[d.n_matrices] = buf + offset;
        d.units[d.n_matrices++] = static_cast<int64_t>(units);
        offset += units * kChunkUnitWords;
      }
      if (d.n_matrices == 0) break;
      guided_pieces({d.units, static_cast<size_t>(d.n_matrices)}, {kUnitWork, static_cast<size_t>(d.n_matrices)},
                    pool_.size(), d.plan);
      std::atomic<int> next{0};
      pool_.run([&](int ith, int) {
        const double c0 = thread_cpu_seconds();
        uint64_t sink = 0;
        while (d.read_chunk(next.fetch_add(1, std::memory_order_relaxed), sink)) {
        }
        sinks_[static_cast<size_t>(ith) * 8] += sink;
        cpu_seconds_[static_cast<size_t>(ith) * 8] += thread_cpu_seconds() - c0;
      });
      if (!more) break;
    }
  }
  decode_words_ = offset;
}

BandwidthProbe::Rate BandwidthProbe::pass(const ReadPattern& pattern) {
  std::fill(cpu_seconds_.begin(), cpu_seconds_.end(), 0.0);
  const auto t0 = std::chrono::steady_clock::now();
  if (pattern.decode_chunks) {
    read_decode_chunks();
  } else {
    read_fixed_shares(pattern.streams);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double slowest = 0.0;
  for (int i = 0; i < pool_.size(); ++i) slowest = std::max(slowest, cpu_seconds_[static_cast<size_t>(i) * 8]);
  const double total = static_cast<double>((pattern.decode_chunks ? decode_words_ : words_) * sizeof(uint64_t));
  return Rate{total / s / 1e9, total / slowest / 1e9, total, s};
}

std::vector<double> bytes_per_s(const PatternRates& rates) {
  std::vector<double> out;
  for (double r : rates) out.push_back(r * 1e9);
  return out;
}

std::array<BandwidthProbe::Rate, kReadPatterns.size()> BandwidthProbe::pattern_passes() {
  std::array<Rate, kReadPatterns.size()> rates;
  for (size_t i = 0; i < kReadPatterns.size(); ++i) rates[i] = pass(kReadPatterns[i]);
  return rates;
}

PatternRates BandwidthProbe::gb_per_s_over(double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  PatternRates pass_seconds{}, pass_bytes{};
  do {
    const auto rates = pattern_passes();
    for (size_t i = 0; i < rates.size(); ++i) {
      pass_seconds[i] += rates[i].seconds;
      pass_bytes[i] += rates[i].bytes;
    }
  } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds);
  PatternRates out;
  for (size_t i = 0; i < out.size(); ++i) out[i] = pass_bytes[i] / pass_seconds[i] / 1e9;
  return out;
}

ReadBandwidth measure_read_bandwidth(ThreadPool& pool, size_t bytes, int reps) {
  reps = std::max(1, reps);
  BandwidthProbe probe(pool, bytes);
  probe.pattern_passes();  // warm-up
  std::array<std::vector<double>, kReadPatterns.size()> rates, cpu_rates;
  for (int r = 0; r < reps; ++r) {
    const auto round = probe.pattern_passes();
    for (size_t i = 0; i < round.size(); ++i) {
      rates[i].push_back(round[i].wall);
      cpu_rates[i].push_back(round[i].cpu);
    }
  }
  auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  ReadBandwidth out;
  for (size_t i = 0; i < rates.size(); ++i) {
    const double m = median(rates[i]);
    out.pattern_gb_per_s[i] = m;
    if (m <= out.gb_per_s) continue;
    out.pattern = kReadPatterns[i].name;
    out.gb_per_s = m;
    out.cpu_time_gb_per_s = median(cpu_rates[i]);
    out.min_gb_per_s = rates[i].front();
    out.max_gb_per_s = rates[i].back();
  }
  out.bytes = probe.bytes();
  out.threads = pool.size();
  return out;
}

}  // namespace ember
