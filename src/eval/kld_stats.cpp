#include "eval/kld_stats.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <fmt/format.h>

#include "sampling/log_softmax.h"
#include "util/error.h"
#include "util/percentile.h"

namespace ember::eval {

KldAccumulator::KldAccumulator(int n_vocab) : n_vocab_(n_vocab), in_top_(size_t(n_vocab), 0) {}

double KldAccumulator::add(std::span<const float> logits, const LogProbRecord& base, int32_t target) {
  if (logits.size() != size_t(n_vocab_)) {
    fail(ErrorKind::Internal, "KLD row of {} logits, vocabulary {}", logits.size(), n_vocab_);
  }
  const LogSoftmaxRow row = log_softmax_row(logits);

  // Top K: exact terms p log(p / q).
  double kld = 0;
  for (const TopEntry& e : base.top) {
    const double lp = e.log_p;
    kld += std::exp(lp) * (lp - log_prob(logits, row, int32_t(e.id)));
    in_top_[e.id] = 1;
  }
  // Tail = p_t log(p_t / q_t) + p_t KL(p|tail || q|tail). q_t is summed from the full row,
  // the conditional KL estimated from the samples i ~ p|tail with the control variate
  // x - 1 (E[x] = 1 for x = (q_i / q_t) / (p_i / p_t)): each term x - 1 - log x >= 0 is
  // second order in the difference of the two models, so the estimate is unbiased and its
  // noise shrinks with the divergence itself.
  if (std::isfinite(base.log_p_tail)) {
    double q_tail = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      if (!in_top_[i]) q_tail += std::exp(double(logits[i]) - row.log_norm);
    }
    const double lp_t = base.log_p_tail;
    const double lq_t = std::log(std::max(q_tail, 1e-300));
    double conditional = 0;
    for (const TopEntry& e : base.tail) {
      const double log_x = (log_prob(logits, row, int32_t(e.id)) - lq_t) - (double(e.log_p) - lp_t);
      conditional += std::expm1(log_x) - log_x;
    }
    if (!base.tail.empty()) conditional /= double(base.tail.size());
    kld += std::exp(lp_t) * (lp_t - lq_t + conditional);
  }
  for (const TopEntry& e : base.top) in_top_[e.id] = 0;

  const double nll = -log_prob(logits, row, target);
  const double nll_base = -double(base.log_p_target);
  nll_.add(nll);
  nll_base_.add(nll_base);
  sum_nll_cross_ += nll * nll_base;
  sum_kld_ += kld;
  sum_kld2_ += kld * kld;
  const double dp = std::exp(-nll) - std::exp(-nll_base);
  sum_dp_ += dp;
  sum_dp2_ += dp * dp;
  sum_dp4_ += dp * dp * dp * dp;
  if (!base.top.empty() && uint32_t(row.argmax) == base.top[0].id) ++n_same_top_;
  kld_.push_back(float(kld));
  p_diff_.push_back(float(dp));
  return kld;
}

KldAccumulator::Estimate KldAccumulator::mean_and_error(double sum, double sum2, int64_t n) {
  if (n < 1) return {};
  const double m = sum / double(n);
  const double var = sum2 / double(n) - m * m;
  return {m, var > 0 && n > 10 ? std::sqrt(var / double(n - 1)) : 0.0};
}

double KldAccumulator::covariance() const {
  const int64_t n = count();
  if (n < 10) return 0.0;
  const double cov = sum_nll_cross_ / double(n) - nll_.mean() * nll_base_.mean();
  return cov / double(n - 1);
}

KldAccumulator::Estimate KldAccumulator::kld() const { return mean_and_error(sum_kld_, sum_kld2_, count()); }
KldAccumulator::Estimate KldAccumulator::p_diff() const { return mean_and_error(sum_dp_, sum_dp2_, count()); }

KldAccumulator::Estimate KldAccumulator::p_diff_rms() const {
  const Estimate mse = mean_and_error(sum_dp2_, sum_dp4_, count());
  const double rms = std::sqrt(mse.value);
  return {rms, rms > 0 ? 0.5 / rms * mse.error : 0.0};
}

KldAccumulator::Estimate KldAccumulator::same_top() const {
  const int64_t n = count();
  if (n < 1) return {};
  const double f = double(n_same_top_) / double(n);
  return {f, n > 1 ? std::sqrt(f * (1 - f) / double(n - 1)) : 0.0};
}

KldAccumulator::Estimate KldAccumulator::log_ppl_ratio() const {
  const Estimate a = mean_and_error(nll_.sum, nll_.sum2, count());
  const Estimate b = mean_and_error(nll_base_.sum, nll_base_.sum2, count());
  const double var = a.error * a.error + b.error * b.error - 2.0 * covariance();
  return {a.value - b.value, var > 0 ? std::sqrt(var) : 0.0};
}

double KldAccumulator::log_ppl_correlation() const {
  const Estimate a = mean_and_error(nll_.sum, nll_.sum2, count());
  const Estimate b = mean_and_error(nll_base_.sum, nll_base_.sum2, count());
  return a.error > 0 && b.error > 0 ? covariance() / (a.error * b.error) : 1.0;
}

std::string KldAccumulator::chunk_table_header() {
  return "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              "
         "Δp RMS            Same top p\n";
}

std::string KldAccumulator::chunk_row(int chunk) const {
  const Estimate lp = mean_and_error(nll_.sum, nll_.sum2, count());
  const double ppl = std::exp(lp.value);
  const Estimate ratio = log_ppl_ratio(), k = kld(), rms = p_diff_rms(), top = same_top();
  return fmt::format("{:4d}    {:9.4f} ± {:9.4f}    {:10.5f} ± {:10.5f}    {:10.5f} ± {:10.5f}    {:6.3f} ± {:6.3f} %    {:6.3f} ± {:6.3f} %\n",
                     chunk, ppl, ppl * lp.error, ratio.value, ratio.error, k.value, k.error, 100 * rms.value,
                     100 * rms.error, 100 * top.value, 100 * top.error);
}

std::string KldAccumulator::report() const {
  std::string out;
  auto it = std::back_inserter(out);
  if (count() < 100) {
    fmt::format_to(it, "(only {} scored positions: the statistics below need at least 100; give more text)\n", count());
    return out;
  }
  std::vector<float> kl = kld_, dp = p_diff_;
  std::sort(kl.begin(), kl.end());
  std::sort(dp.begin(), dp.end());

  const Estimate lq = mean_and_error(nll_.sum, nll_.sum2, count());
  const Estimate lb = mean_and_error(nll_base_.sum, nll_base_.sum2, count());
  const double ppl_q = std::exp(lq.value), ppl_b = std::exp(lb.value);
  const Estimate ratio = log_ppl_ratio();
  fmt::format_to(it, "====== Perplexity statistics ======\n");
  fmt::format_to(it, "Mean PPL(Q)                   : {:10.6f} ± {:10.6f}\n", ppl_q, ppl_q * lq.error);
  fmt::format_to(it, "Mean PPL(base)                : {:10.6f} ± {:10.6f}\n", ppl_b, ppl_b * lb.error);
  fmt::format_to(it, "Cor(ln(PPL(Q)), ln(PPL(base))): {:6.2f}%\n", 100 * log_ppl_correlation());
  fmt::format_to(it, "Mean ln(PPL(Q)/PPL(base))     : {:10.6f} ± {:10.6f}\n", ratio.value, ratio.error);
  const double r = std::exp(ratio.value);
  fmt::format_to(it, "Mean PPL(Q)/PPL(base)         : {:10.6f} ± {:10.6f}\n", r, r * ratio.error);
  const double cov = ppl_q * ppl_b * covariance();
  const double dvar = std::pow(ppl_q * lq.error, 2) + std::pow(ppl_b * lb.error, 2) - 2 * cov;
  fmt::format_to(it, "Mean PPL(Q)-PPL(base)         : {:10.6f} ± {:10.6f}\n\n", ppl_q - ppl_b, dvar > 0 ? std::sqrt(dvar) : 0.0);

  const Estimate k = kld();
  fmt::format_to(it, "====== KL divergence statistics ======\n");
  fmt::format_to(it, "Mean    KLD: {:10.6f} ± {:10.6f}\n", k.value, k.error);
  fmt::format_to(it, "Maximum KLD: {:10.6f}\n", kl.back());
  const std::pair<const char*, double> kl_points[] = {{"99.9%", .999}, {"99.0%", .99}, {"95.0%", .95}, {"90.0%", .90}};
  for (auto [name, f] : kl_points) fmt::format_to(it, "{:<8}KLD: {:10.6f}\n", name, percentile(kl, f));
  fmt::format_to(it, "Median  KLD: {:10.6f}\n", percentile(kl, 0.5));
  const std::pair<const char*, double> kl_low[] = {{"10.0%", .10}, {" 5.0%", .05}, {" 1.0%", .01}, {" 0.1%", .001}};
  for (auto [name, f] : kl_low) fmt::format_to(it, "{:<8}KLD: {:10.6f}\n", name, percentile(kl, f));
  fmt::format_to(it, "Minimum KLD: {:10.6f}\n\n", kl.front());

  const Estimate d = p_diff();
  fmt::format_to(it, "====== Token probability statistics ======\n");
  fmt::format_to(it, "Mean    Δp: {:6.3f} ± {:5.3f} %\n", 100 * d.value, 100 * d.error);
  fmt::format_to(it, "Maximum Δp: {:6.3f}%\n", 100 * dp.back());
  const std::pair<const char*, double> dp_points[] = {{"99.9%", .999}, {"99.0%", .99}, {"95.0%", .95},
                                                      {"90.0%", .90},  {"75.0%", .75}};
  for (auto [name, f] : dp_points) fmt::format_to(it, "{:<8}Δp: {:6.3f}%\n", name, 100 * percentile(dp, f));
  fmt::format_to(it, "Median  Δp: {:6.3f}%\n", 100 * percentile(dp, 0.5));
  const std::pair<const char*, double> dp_low[] = {{"25.0%", .25}, {"10.0%", .10}, {" 5.0%", .05}, {" 1.0%", .01},
                                                   {" 0.1%", .001}};
  for (auto [name, f] : dp_low) fmt::format_to(it, "{:<8}Δp: {:6.3f}%\n", name, 100 * percentile(dp, f));
  fmt::format_to(it, "Minimum Δp: {:6.3f}%\n", 100 * dp.front());
  const Estimate rms = p_diff_rms();
  fmt::format_to(it, "RMS Δp    : {:6.3f} ± {:5.3f} %\n", 100 * rms.value, 100 * rms.error);
  const Estimate top = same_top();
  fmt::format_to(it, "Same top p: {:6.3f} ± {:5.3f} %\n", 100 * top.value, 100 * top.error);
  return out;
}

}  // namespace ember::eval
