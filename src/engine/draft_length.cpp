#include "engine/draft_length.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace ember {

namespace {
constexpr double kKeep = 0.9;    // weight of the old estimate per new measurement
constexpr double kMargin = 1.05; // predicted speed-up needed to draft
// Timings on a shared machine have rare huge outliers (a preempted thread costs a whole
// scheduler slice): a sample counts at most twice the current estimate, so one hiccup cannot
// make plain steps look slow (and drafting look good) for many rounds.
double ewma(double old, double sample, bool have) {
  return have ? kKeep * old + (1 - kKeep) * std::min(sample, 2.0 * old) : sample;
}
}  // namespace

DraftLength::DraftLength(const DraftLengthOptions& o)
    : opt_(o), t_(static_cast<size_t>(std::max(o.max, 1)) + 2, 0.0), probe_interval_(first_probe()) {
  if (o.max < 1) fail(ErrorKind::InvalidArgument, "--draft-max {} must be at least 1", o.max);
  if (o.min < 1 || o.min > o.max)
    fail(ErrorKind::InvalidArgument, "--draft-min {} must be between 1 and --draft-max {}", o.min, o.max);
}

double DraftLength::acceptance() const { return std::clamp(acc_ / tried_, 0.0, 0.999); }

double DraftLength::pass_ms(int n) const {
  const double a = have_a_ ? a_ : 1.0;
  if (n == 1) return a;
  // A pass over more tokens never costs less than a plain step: a lower sample is noise.
  if (static_cast<size_t>(n) < t_.size() && t_[static_cast<size_t>(n)] > 0) return std::max(a, t_[static_cast<size_t>(n)]);
  const double b = have_b_ ? b_ : 0.2 * a;  // prior until measured
  return a + b * (n - 1);
}

double DraftLength::rate(int k) const { return rate(k, acceptance()); }

bool DraftLength::could_pay() const {
  for (int k = opt_.min; k <= opt_.max; ++k)
    if (rate(k, 0.999) > kMargin * rate(0)) return true;
  return false;
}

double DraftLength::rate(int k, double alpha) const {
  if (k == 0) return 1.0 / pass_ms(1);
  const double a = have_a_ ? a_ : 1.0;
  const double c = have_c_ ? c_ : 0.1 * a;
  const double expected = (1.0 - std::pow(alpha, k + 1)) / (1.0 - alpha);
  return expected / (pass_ms(k + 1) + c * k);
}

int DraftLength::next() {
  if (!opt_.adaptive) return opt_.max;
  if (!have_a_) return 0;  // the first step measures a plain pass
  int best = opt_.min;
  for (int k = opt_.min + 1; k <= opt_.max; ++k)
    if (rate(k) > rate(best)) best = k;
  // Drafting must promise a clear gain (kMargin): timing noise on a loaded machine must not
  // switch it on for a draft that cannot pay (acceptance near 0, or a draft as costly as the
  // target).
  const bool pays = rate(best) > kMargin * rate(0);
  if (pays) {
    off_ = false;
    ++on_streak_;
    return ++rounds_on_ % 32 == 0 ? 0 : best;  // a plain step now and then keeps a current
  }
  if (!off_) {
    off_ = true;
    plain_since_probe_ = 0;
    // Back to short probe intervals only after drafting paid for a while (not after a probe
    // that switched it on for a round or two).
    if (on_streak_ >= 8) probe_interval_ = first_probe();
    on_streak_ = 0;
  }
  // A probe of a draft model first decodes every token it missed (a small prefill), so its
  // probes start later and thin out faster than n-gram ones.
  if (++plain_since_probe_ >= probe_interval_) {
    plain_since_probe_ = 0;
    probe_interval_ = opt_.costly_source ? std::min(1024, probe_interval_ * 4) : std::min(256, probe_interval_ * 2);
    // A draft model's probe first catches up on every token it missed (measured: 480 ms for
    // 64 tokens of qwen2.5-coder-0.5b, 8% of a 128-token run of the 1.5B): pointless when the
    // draft is too slow to pay even if always right (that 0.5B costs 0.9 target steps per
    // token on 2 cores).
    if (opt_.costly_source && have_c_ && !could_pay()) return 0;
    return opt_.min;
  }
  return 0;
}

void DraftLength::record_pass(int n, double ms) {
  if (n <= 0 || !(ms >= 0)) return;
  if (!warm_) {  // caches, page faults, scratch growth: not what later passes cost
    warm_ = true;
    return;
  }
  // A pass over n tokens never honestly costs more than n plain steps: a longer one was
  // preempted, and one such sample of a size that is then rarely used (drafting switched off
  // because of it) would otherwise stay in its estimate.
  if (n > 1 && have_a_) ms = std::min(ms, n * a_);
  if (static_cast<size_t>(n) < t_.size()) {
    double& t = t_[static_cast<size_t>(n)];
    t = ewma(t, ms, t > 0);
  }
  if (n == 1) {
    a_ = ewma(a_, ms, have_a_);
    have_a_ = true;
  } else if (have_a_) {
    b_ = ewma(b_, std::max(0.0, (ms - a_) / (n - 1)), have_b_);
    have_b_ = true;
  }
}

void DraftLength::record_draft(int n, double ms) {
  if (!(ms >= 0)) return;
  // A draft model's first proposal after its prompt prefill pays its own warm-up (measured:
  // 54 ms for one token of qwen2.5-coder-0.5b beside 45 ms for a plain step of the 1.5B
  // target); as the first sample it would set the estimate and keep drafting off.
  if (opt_.costly_source && !draft_warm_) {
    draft_warm_ = true;
    return;
  }
  // A proposal that found nothing still cost its time: charge it to one token.
  c_ = ewma(c_, ms / std::max(1, n), have_c_);
  have_c_ = true;
}

void DraftLength::record_verdict(int drafted, int accepted) {
  if (drafted <= 0) return;
  // Positions tried: the accepted ones plus the one rejected (if any).
  const int tried = accepted + (accepted < drafted ? 1 : 0);
  acc_ = kKeep * acc_ + accepted;
  tried_ = kKeep * tried_ + tried;
}

}  // namespace ember
