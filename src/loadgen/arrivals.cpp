#include "loadgen/arrivals.h"

#include <cmath>

#include "sampling/rng.h"
#include "util/error.h"

namespace ember::loadgen {
namespace {

// Box-Muller: one standard normal from two uniforms (1 - u keeps the log finite).
double normal_sample(Rng& rng) {
  const double u1 = 1.0 - rng.uniform01(), u2 = rng.uniform01();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

}  // namespace

double gamma_sample(Rng& rng, double shape, double scale) {
  // Shapes below 1 boost through shape + 1: gamma(k) = gamma(k + 1) * U^(1/k).
  if (shape < 1.0) return gamma_sample(rng, shape + 1.0, scale) * std::pow(1.0 - rng.uniform01(), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = normal_sample(rng), v = std::pow(1.0 + c * x, 3);
    if (v <= 0) continue;
    const double u = 1.0 - rng.uniform01();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v * scale;
  }
}

std::vector<double> arrival_times(int n, const ArrivalOptions& opts) {
  if (!(opts.rate > 0)) fail(ErrorKind::InvalidArgument, "--request-rate {} must be > 0 (inf: all at once)", opts.rate);
  if (!(opts.burstiness > 0) || std::isinf(opts.burstiness))
    fail(ErrorKind::InvalidArgument, "--burstiness {} must be a positive number", opts.burstiness);
  std::vector<double> times(static_cast<size_t>(std::max(n, 0)), 0.0);
  if (std::isinf(opts.rate)) return times;
  // Mean gap = shape * scale = 1 / rate whatever the burstiness.
  const double scale = 1.0 / (opts.rate * opts.burstiness);
  Rng rng(opts.seed);
  for (size_t i = 1; i < times.size(); ++i) times[i] = times[i - 1] + gamma_sample(rng, opts.burstiness, scale);
  return times;
}

}  // namespace ember::loadgen
