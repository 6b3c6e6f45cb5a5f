// How many tokens to draft next round, from costs measured at run time, so that speculative
// decoding is never (much) slower than plain decoding.
//
// Model: a target pass over n tokens costs t(n) (t(1) = a, one plain decode step), a drafted
// token costs c, and each drafted token is accepted with probability alpha given the ones
// before it were. A round drafting k tokens then yields E(k) = (1 - alpha^(k+1)) / (1 - alpha)
// tokens in t(k + 1) + c k, against 1 / a for plain decoding. t(n) is measured per n, not
// assumed linear: the CPU matmul shares weight loads only from 4 tokens on (its micro-tile),
// so 2-3 token passes cost nearly 2-3 steps while 4-5 cost little more than 3; unmeasured
// sizes are interpolated as a + b (n - 1). The controller picks the k in [min, max] with the
// best rate, or 0 (drafting off) when even that does not beat plain decoding by 5%. While on, every
// 32nd round is a plain step that keeps a current (machine load changes); while off it probes
// with a short draft after 16, 32, ... 256 plain steps (64, 256, 1024 for a draft model, whose
// probe must first catch up on the tokens it missed). The first pass is a warm-up and not
// measured. Estimates are exponentially weighted and start from mild priors.
#pragma once
#include <vector>

namespace ember {

struct DraftLengthOptions {
  int min = 1;            // fewest tokens worth drafting when drafting is on
  int max = 8;            // most tokens drafted per round
  bool adaptive = true;   // false: always draft max (tests, measurements)
  bool costly_source = true;  // a draft model (probes catch up); false for n-gram lookup
};

class DraftLength {
 public:
  explicit DraftLength(const DraftLengthOptions& options);

  int next();  // tokens to draft this round; 0 = a plain decode step

  void record_pass(int n_tokens, double ms);    // one target pass over n_tokens
  void record_draft(int n_drafted, double ms);  // one proposal (0 tokens: its cost still counts)
  void record_verdict(int drafted, int accepted);

  double acceptance() const;    // alpha estimate
  double plain_ms() const { return a_; }
  double rate(int k) const;     // estimated tokens per ms drafting k (k = 0: plain)
  // False when the draft's measured cost is such that no draft length would pay even if
  // every drafted token were accepted: probing it again cannot switch drafting on.
  bool could_pay() const;
  bool off() const { return off_; }

 private:
  DraftLengthOptions opt_;
  double pass_ms(int n) const;     // t(n), measured or interpolated
  double rate(int k, double alpha) const;
  double a_ = 0, b_ = 0, c_ = 0;   // ms
  bool have_a_ = false, have_b_ = false, have_c_ = false;
  std::vector<double> t_;          // [n] measured t(n), 0 = not yet
  bool warm_ = false;              // the warm-up pass went by
  bool draft_warm_ = false;        // the draft's warm-up proposal went by
  int rounds_on_ = 0;
  double acc_ = 1.0, tried_ = 2.0;  // decayed counts: prior alpha = 0.5
  bool off_ = false;
  int first_probe() const { return opt_.costly_source ? 64 : 16; }
  int plain_since_probe_ = 0, probe_interval_, on_streak_ = 0;
};

}  // namespace ember
