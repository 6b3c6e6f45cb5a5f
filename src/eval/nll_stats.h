// Running negative log-likelihood statistics and llama.cpp's perplexity uncertainty:
// with m = mean(nll) and s^2 = mean(nll^2) - m^2 over the N scored tokens,
//   PPL = exp(m),   +/- = PPL * sqrt(s^2 / (N - 1))
// (the standard error of the mean nll, carried through exp to first order).
#pragma once
#include <cstdint>

namespace ember::eval {

struct NllStats {
  double sum = 0;
  double sum2 = 0;
  int64_t count = 0;

  void add(double nll) { sum += nll; sum2 += nll * nll; ++count; }
  void merge(const NllStats& o) { sum += o.sum; sum2 += o.sum2; count += o.count; }
  double mean() const { return count ? sum / double(count) : 0.0; }
  double ppl() const;
  // Standard error of the mean nll; 0 when undefined (fewer than 2 tokens, variance <= 0).
  double mean_error() const;
  double ppl_error() const { return ppl() * mean_error(); }
};

}  // namespace ember::eval
