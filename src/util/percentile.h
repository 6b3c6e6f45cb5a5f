// Percentiles of sorted samples, one rule for every report (batch and bench-serve latencies,
// the KLD/delta-p listing): linear interpolation between the two nearest ranks at position
// fraction * (n - 1), numpy's default and llama.cpp's rule for its KLD percentiles, so the
// numbers compare one to one with theirs.
#pragma once
#include <algorithm>
#include <cstddef>
#include <span>

namespace ember {

namespace detail {
template <class T>
double percentile(std::span<const T> sorted, double fraction) {
  if (sorted.empty()) return 0;
  if (fraction <= 0) return sorted.front();
  if (fraction >= 1) return sorted.back();
  const double pos = fraction * static_cast<double>(sorted.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  const double w = pos - static_cast<double>(i);
  // An exact rank reads one value alone (an infinite neighbour would make 0 * inf a NaN).
  if (w == 0) return sorted[i];
  return (1 - w) * sorted[i] + w * sorted[std::min(i + 1, sorted.size() - 1)];
}
}  // namespace detail

// fraction in [0, 1] of ascending values; 0 when there are none.
inline double percentile(std::span<const double> sorted, double fraction) {
  return detail::percentile(sorted, fraction);
}
inline double percentile(std::span<const float> sorted, double fraction) {
  return detail::percentile(sorted, fraction);
}

}  // namespace ember
