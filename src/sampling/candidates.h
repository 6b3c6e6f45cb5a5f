// Candidate tokens and the individual transforms of the sampler chain. Each transform works
// on a list of candidates and is usable on its own (tests check each on crafted inputs).
//
// Conventions: after sort_by_logit() the list is in descending logit order with ties broken
// by ascending token id, and every filter below keeps that order (each keeps a prefix).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace ember {

struct TokenCandidate {
  int32_t id;
  float logit;
  float p;  // probability after the last softmax(); meaningless before
};

struct Candidates {
  std::vector<TokenCandidate> items;
  bool sorted = false;  // descending logit, ties by ascending id

  size_t size() const { return items.size(); }
  // Probability of token id in this distribution; 0 when it was filtered out.
  float prob_of(int32_t id) const;
};

// One candidate per logit, unsorted. Throws Error(Internal) on a NaN logit (a broken model
// must not silently produce text).
Candidates make_candidates(std::span<const float> logits);

// Index of the largest logit, ties -> lowest id. Throws Error(Internal) on NaN / empty.
int32_t argmax(std::span<const float> logits);

// Sorts descending by logit, ties by ascending id.
void sort_by_logit(Candidates& c);

// Keeps the k largest logits (k <= 0 or k >= size keeps all) and leaves the list sorted.
void keep_top_k(Candidates& c, int k);

// Sets p = softmax(logit) over the current candidates (numerically stable: max subtracted).
void softmax(Candidates& c);

// Nucleus: keeps the shortest sorted prefix whose probability mass reaches top_p (at least
// one token). Sorts and computes the softmax itself. top_p >= 1 keeps all.
void keep_top_p(Candidates& c, float top_p);

// Keeps tokens with p >= min_p * p_max, computed on the current candidates (at least one).
// min_p <= 0 keeps all.
void keep_min_p(Candidates& c, float min_p);

// Divides every logit by t (t > 0).
void scale_temperature(Candidates& c, float t);

}  // namespace ember
