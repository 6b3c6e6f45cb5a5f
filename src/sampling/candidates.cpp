#include "sampling/candidates.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace ember {

namespace {
bool before(const TokenCandidate& a, const TokenCandidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}
}  // namespace

float Candidates::prob_of(int32_t id) const {
  for (const auto& c : items)
    if (c.id == id) return c.p;
  return 0.0f;
}

Candidates make_candidates(std::span<const float> logits) {
  Candidates c;
  c.items.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) fail(ErrorKind::Internal, "logit of token {} is NaN", i);
    c.items[i] = {static_cast<int32_t>(i), logits[i], 0.0f};
  }
  return c;
}

int32_t argmax(std::span<const float> logits) {
  if (logits.empty()) fail(ErrorKind::Internal, "argmax over an empty vocabulary");
  size_t best = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) fail(ErrorKind::Internal, "logit of token {} is NaN", i);
    if (logits[i] > logits[best]) best = i;  // strict: the first (lowest id) maximum wins
  }
  return static_cast<int32_t>(best);
}

void sort_by_logit(Candidates& c) {
  if (!c.sorted) std::sort(c.items.begin(), c.items.end(), before);
  c.sorted = true;
}

void keep_top_k(Candidates& c, int k) {
  if (k <= 0 || static_cast<size_t>(k) >= c.items.size()) {
    sort_by_logit(c);
    return;
  }
  if (!c.sorted) std::partial_sort(c.items.begin(), c.items.begin() + k, c.items.end(), before);
  c.items.resize(static_cast<size_t>(k));
  c.sorted = true;
}

void softmax(Candidates& c) {
  if (c.items.empty()) fail(ErrorKind::Internal, "softmax over no candidates");
  float max_logit = -INFINITY;
  for (const auto& t : c.items) max_logit = std::max(max_logit, t.logit);
  if (!std::isfinite(max_logit)) fail(ErrorKind::Internal, "no candidate has a finite logit");
  double sum = 0.0;
  for (auto& t : c.items) {
    t.p = std::exp(t.logit - max_logit);
    sum += t.p;
  }
  for (auto& t : c.items) t.p = static_cast<float>(t.p / sum);
}

void keep_top_p(Candidates& c, float top_p) {
  if (top_p >= 1.0f || c.items.size() <= 1) return;
  sort_by_logit(c);
  softmax(c);
  double mass = 0.0;
  size_t keep = c.items.size();
  for (size_t i = 0; i < c.items.size(); ++i) {
    mass += c.items[i].p;
    if (mass >= top_p) {
      keep = i + 1;
      break;
    }
  }
  c.items.resize(keep);
}

void keep_min_p(Candidates& c, float min_p) {
  if (min_p <= 0.0f || c.items.size() <= 1) return;
  sort_by_logit(c);
  softmax(c);
  const float threshold = min_p * c.items[0].p;
  size_t keep = 1;
  while (keep < c.items.size() && c.items[keep].p >= threshold) ++keep;
  c.items.resize(keep);
}

void scale_temperature(Candidates& c, float t) {
  for (auto& item : c.items) item.logit /= t;
}

}  // namespace ember
