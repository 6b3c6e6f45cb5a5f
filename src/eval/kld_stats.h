// KL divergence of a model's next-token distributions against a stored base (logprob_store.h)
// and the statistics llama.cpp's `llama-perplexity --kl-divergence` prints: PPL of both
// models with their correlation and ratio, mean KLD +/- its standard error, KLD percentiles,
// delta-p = p(target) - p_base(target) (mean, RMS, percentiles) and how often both models
// agree on the most likely token ("same top p").
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "eval/logprob_store.h"
#include "eval/nll_stats.h"

namespace ember::eval {

class KldAccumulator {
 public:
  explicit KldAccumulator(int n_vocab);

  // Scores one position: `logits` is the new model's row, `base` the stored record for the
  // same position, `target` the next token. Returns this position's KLD (exact for the top
  // K and the tail mass, estimated inside the tail: see logprob_store.h).
  double add(std::span<const float> logits, const LogProbRecord& base, int32_t target);

  const NllStats& nll() const { return nll_; }
  const NllStats& nll_base() const { return nll_base_; }
  int64_t count() const { return nll_.count; }
  const std::vector<float>& kld_values() const { return kld_; }
  const std::vector<float>& p_diff_values() const { return p_diff_; }

  // Mean and standard error of the per-position series (error 0 for < 11 values, as llama.cpp).
  struct Estimate { double value = 0, error = 0; };
  Estimate kld() const;
  Estimate p_diff() const;
  Estimate p_diff_rms() const;
  Estimate same_top() const;       // fraction in [0, 1]
  Estimate log_ppl_ratio() const;  // ln(PPL(Q) / PPL(base)), with the covariance of both nll
  double log_ppl_correlation() const;

  // One row of the running per-chunk table (header from chunk_table_header()).
  std::string chunk_row(int chunk) const;
  static std::string chunk_table_header();
  // The final report; needs >= 100 positions for the percentile sections, like llama.cpp.
  std::string report() const;

 private:
  static Estimate mean_and_error(double sum, double sum2, int64_t n);
  double covariance() const;

  NllStats nll_, nll_base_;
  double sum_nll_cross_ = 0;  // sum of nll * nll_base
  double sum_kld_ = 0, sum_kld2_ = 0;
  double sum_dp_ = 0, sum_dp2_ = 0, sum_dp4_ = 0;
  int64_t n_same_top_ = 0;
  std::vector<float> kld_, p_diff_;
  int n_vocab_;  // row length add() expects
  std::vector<uint8_t> in_top_;  // scratch mask over the vocabulary
};

}  // namespace ember::eval
