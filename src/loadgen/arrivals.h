// When each request of a serving benchmark is sent, as vLLM's benchmark_serving does it:
// the gaps between requests are gamma-distributed with shape `burstiness` and mean 1/rate,
// so burstiness 1 is a Poisson process, below 1 burstier, above 1 more regular. A rate of
// infinity sends every request at time 0.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

namespace ember {
class Rng;
}

namespace ember::loadgen {

struct ArrivalOptions {
  double rate = std::numeric_limits<double>::infinity();  // requests per second
  double burstiness = 1.0;                                 // gamma shape, > 0
  uint64_t seed = 0;
};

// Send times in seconds from the start: the first at 0, then cumulative gaps. Throws
// Error(InvalidArgument) for a rate or burstiness that is not positive.
std::vector<double> arrival_times(int n, const ArrivalOptions& opts);

// A gamma(shape, scale) draw (Marsaglia and Tsang 2000) from the project's fully specified
// generator, so a seed gives the same schedule with every standard library.
double gamma_sample(Rng& rng, double shape, double scale);

}  // namespace ember::loadgen
