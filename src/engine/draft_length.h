// How many tokens to draft next round, from costs measured at run time, so that speculative
// decoding is never (much) slower than plain decoding.
//
// Model: a target pass over n tokens costs t(n) = a + b (n - 1) (a = one plain decode step),
// a drafted token costs c, and each drafted token is accepted with probability alpha given
// the ones before it were. A round drafting k tokens then yields E(k) = (1 - alpha^(k+1)) /
// (1 - alpha) tokens in a + (b + c) k, so the rate is E(k) / (a + (b + c) k) against 1 / a
// for plain decoding. The controller picks the k in [min, max] with the best rate, or 0
// (drafting off) when even that does not beat plain decoding; while off it probes again with
// a short draft after 16, 32, ... 256 plain steps, so a later copy-heavy stretch or a better
// acceptance is noticed at a bounded cost. Estimates are exponentially weighted (recent
// rounds count more) and start from mild priors until measured.
#pragma once

namespace ember {

struct DraftLengthOptions {
  int min = 1;            // fewest tokens worth drafting when drafting is on
  int max = 8;            // most tokens drafted per round
  bool adaptive = true;   // false: always draft max (tests, measurements)
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
  bool off() const { return off_; }

 private:
  DraftLengthOptions opt_;
  double a_ = 0, b_ = 0, c_ = 0;   // ms; 0 = not measured yet
  bool have_a_ = false, have_b_ = false, have_c_ = false;
  double acc_ = 1.0, tried_ = 2.0;  // decayed counts: prior alpha = 0.5
  bool off_ = false;
  int plain_since_probe_ = 0, probe_interval_ = 16;
};

}  // namespace ember
