#include "util/membw.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

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
  // First touch from the threads that read, so pages are mapped (and NUMA-local).
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

BandwidthProbe::Rate BandwidthProbe::pass(int streams) {
  const uint64_t* const buf = reinterpret_cast<const uint64_t*>(storage_.get());
  const auto t0 = std::chrono::steady_clock::now();
  pool_.run([&](int ith, int n) {
    const size_t b = words_ * ith / n, e = words_ * (ith + 1) / n;
    const double c0 = thread_cpu_seconds();
    sinks_[static_cast<size_t>(ith) * 8] += read_words(buf + b, e - b, streams);
    cpu_seconds_[static_cast<size_t>(ith) * 8] = thread_cpu_seconds() - c0;
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double slowest = 0.0;
  for (int i = 0; i < pool_.size(); ++i) slowest = std::max(slowest, cpu_seconds_[static_cast<size_t>(i) * 8]);
  const double total = static_cast<double>(bytes());
  return Rate{total / s / 1e9, total / slowest / 1e9};
}

std::vector<double> bytes_per_s(const PatternRates& rates) {
  std::vector<double> out;
  for (double r : rates) out.push_back(r * 1e9);
  return out;
}

std::array<BandwidthProbe::Rate, kReadStreams.size()> BandwidthProbe::pattern_passes() {
  std::array<Rate, kReadStreams.size()> rates;
  for (size_t i = 0; i < kReadStreams.size(); ++i) rates[i] = pass(kReadStreams[i]);
  return rates;
}

PatternRates BandwidthProbe::gb_per_s_over(double seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  PatternRates pass_seconds{};
  int n = 0;
  do {
    const auto rates = pattern_passes();
    for (size_t i = 0; i < rates.size(); ++i) pass_seconds[i] += static_cast<double>(bytes()) / (rates[i].wall * 1e9);
    ++n;
  } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds);
  PatternRates out;
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(bytes()) * n / pass_seconds[i] / 1e9;
  return out;
}

ReadBandwidth measure_read_bandwidth(ThreadPool& pool, size_t bytes, int reps) {
  reps = std::max(1, reps);
  BandwidthProbe probe(pool, bytes);
  probe.pattern_passes();  // warm-up
  std::array<std::vector<double>, kReadStreams.size()> rates, cpu_rates;
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
    if (m <= out.gb_per_s) continue;
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
