#include "eval/nll_stats.h"

#include <cmath>

namespace ember::eval {

double NllStats::ppl() const { return std::exp(mean()); }

double NllStats::mean_error() const {
  if (count < 2) return 0.0;
  const double m = mean();
  const double var = sum2 / double(count) - m * m;
  return var > 0 ? std::sqrt(var / double(count - 1)) : 0.0;
}

}  // namespace ember::eval
