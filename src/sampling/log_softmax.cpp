#include "sampling/log_softmax.h"

#include <cmath>

namespace ember {

LogSoftmaxRow log_softmax_row(std::span<const float> logits) {
  LogSoftmaxRow row;
  float max_logit = logits[0];
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > max_logit) {
      max_logit = logits[i];
      row.argmax = int32_t(i);
    }
  }
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - double(max_logit));
  row.log_norm = double(max_logit) + std::log(sum);
  return row;
}

}  // namespace ember
