// Log-softmax of one logits row, in the precision the perplexity and KL statistics and the
// served log-probabilities need: the maximum in float, the sum of exponentials in double (a
// 150k-token vocabulary summed in float loses ~4 digits), so
// log p(token) = logit - (max + log(sum exp(logit - max))).
#pragma once
#include <cstdint>
#include <span>

namespace ember {

struct LogSoftmaxRow {
  double log_norm = 0;  // max + log(sum exp(logit - max)) = log of the partition function
  int32_t argmax = 0;   // first index holding the maximum logit
};

LogSoftmaxRow log_softmax_row(std::span<const float> logits);

// log p(token) for a row whose LogSoftmaxRow is `row`.
inline double log_prob(std::span<const float> logits, const LogSoftmaxRow& row, int32_t token) {
  return double(logits[token]) - row.log_norm;
}

}  // namespace ember
