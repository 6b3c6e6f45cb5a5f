// util/membw: the bandwidth probe's plumbing (never its timings, which belong to benchmarks):
// every read pattern reads the buffer (decode's chunks all of it but a tail shorter than a
// chunk unit) with any pool size and reports positive rates, and the measurement names the
// pattern it reports.
#include <doctest/doctest.h>

#include <string>

#include "util/membw.h"
#include "util/thread_pool.h"

using namespace ember;

TEST_CASE("bandwidth probe: every pattern reads the buffer and reports a rate") {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    // 40 MiB: one TinyLlama layer (23.6 MiB) and a part of the next, cut inside its matrices.
    BandwidthProbe probe(pool, size_t{40} << 20);
    CHECK(probe.bytes() == size_t{40} << 20);
    for (const ReadPattern& p : kReadPatterns) {
      INFO(p.name << ", " << threads << " threads");
      const BandwidthProbe::Rate r = probe.pass(p);
      CHECK(r.wall > 0.0);
      CHECK(r.cpu > 0.0);
      CHECK(r.seconds > 0.0);
      if (p.decode_chunks) {
        CHECK(r.bytes <= static_cast<double>(probe.bytes()));
        CHECK(r.bytes > static_cast<double>(probe.bytes()) - 18 * 1024);  // less than one chunk unit left out
      } else {
        CHECK(r.bytes == static_cast<double>(probe.bytes()));
      }
    }
    const PatternRates over = probe.gb_per_s_over(0.0);  // one round of every pattern
    for (double g : over) CHECK(g > 0.0);
  }
}

TEST_CASE("bandwidth probe: the measurement names the pattern it reports") {
  ThreadPool pool(2);
  const ReadBandwidth bw = measure_read_bandwidth(pool, size_t{8} << 20, 1);
  CHECK(bw.gb_per_s > 0.0);
  bool named = false;
  for (size_t i = 0; i < kReadPatterns.size(); ++i) {
    CHECK(bw.pattern_gb_per_s[i] > 0.0);
    if (std::string(bw.pattern) == kReadPatterns[i].name) {
      named = true;
      CHECK(bw.pattern_gb_per_s[i] == bw.gb_per_s);  // the best median is the one reported
    }
  }
  CHECK(named);
}
