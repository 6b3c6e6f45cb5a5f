// The routing and the weighted sum of a mixture-of-experts layer on the host (ops.h):
// plain per-row loops. They touch n_expert and n_used values per token, nothing next to
// the experts' matmuls.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backend/ops.h"
#include "util/error.h"
#include "util/thread_pool.h"

namespace ember::ops {

namespace {

// p = softmax(l) over n values (max subtracted, as ggml_soft_max). p may be l: each l[i] is
// read before p[i] is written.
void softmax_row(const float* l, int n, float* p) {
  const float mx = *std::max_element(l, l + n);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += p[i] = std::exp(l[i] - mx);
  const float inv = static_cast<float>(1.0 / sum);
  for (int i = 0; i < n; ++i) p[i] *= inv;
}

void route_row(const float* logits, const MoeRouting& r, int32_t* ids, float* weights, std::vector<float>& probs,
               std::vector<float>& score, std::vector<int32_t>& order) {
  const int n = r.n_expert, k = r.n_used;
  switch (r.gating) {
    case MoeGating::Softmax: softmax_row(logits, n, probs.data()); break;
    case MoeGating::Sigmoid:
      for (int i = 0; i < n; ++i) probs[i] = 1.0f / (1.0f + std::exp(-logits[i]));
      break;
    case MoeGating::SoftmaxSelected: std::copy_n(logits, n, probs.data()); break;
  }
  // The bias only decides which experts run; their weights come from the unbiased probs.
  for (int i = 0; i < n; ++i) score[i] = probs[i] + (r.selection_bias ? r.selection_bias[i] : 0.0f);
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int32_t a, int32_t b) { return score[a] > score[b] || (score[a] == score[b] && a < b); });
  for (int j = 0; j < k; ++j) {
    ids[j] = order[j];
    weights[j] = probs[order[j]];
  }
  if (r.gating == MoeGating::SoftmaxSelected) softmax_row(weights, k, weights);  // in place: see softmax_row
  if (r.norm_weights) {
    float sum = 0.0f;
    for (int j = 0; j < k; ++j) sum += weights[j];
    sum = std::max(sum, 6.103515625e-5f);  // llama.cpp's clamp: the smallest normal f16
    for (int j = 0; j < k; ++j) weights[j] /= sum;
  }
  if (r.weights_scale != 0.0f && r.weights_scale != 1.0f)
    for (int j = 0; j < k; ++j) weights[j] *= r.weights_scale;
}

}  // namespace

void moe_route(const MatView& logits, const MoeRouting& r, int32_t* ids, float* weights) {
  if (logits.type != DType::F32 || logits.cols != r.n_expert || r.n_used <= 0 || r.n_used > r.n_expert)
    fail(ErrorKind::InvalidArgument, "moe_route: {} logits per row for {} experts, {} used", logits.cols, r.n_expert,
         r.n_used);
  thread_local std::vector<float> probs, score;  // reused: decode routes once per layer
  thread_local std::vector<int32_t> order;
  probs.resize(static_cast<size_t>(r.n_expert));
  score.resize(static_cast<size_t>(r.n_expert));
  order.resize(static_cast<size_t>(r.n_expert));
  for (int64_t t = 0; t < logits.rows; ++t)
    route_row(reinterpret_cast<const float*>(logits.row(t)), r, ids + t * r.n_used, weights + t * r.n_used, probs,
              score, order);
}

void moe_combine(ThreadPool& pool, const MatView& experts, const float* weights, int n_used, const MatView& shared,
                 const MatView& shared_gate, F32Mat out) {
  if (experts.type != DType::F32 || experts.cols != out.cols || experts.rows != out.rows * n_used ||
      (shared.data && (shared.rows != out.rows || shared.cols != out.cols)) ||
      (shared_gate.data && shared_gate.rows != out.rows))
    fail(ErrorKind::InvalidArgument, "moe_combine: {}x{} expert rows, {} used, for {}x{}", experts.rows, experts.cols,
         n_used, out.rows, out.cols);
  pool.parallel_for(out.rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float* o = out.row(t);
      const float* w = weights + t * n_used;
      const float* e0 = reinterpret_cast<const float*>(experts.row(t * n_used));
      for (int64_t i = 0; i < out.cols; ++i) o[i] = w[0] * e0[i];
      for (int j = 1; j < n_used; ++j) {
        const float* e = reinterpret_cast<const float*>(experts.row(t * n_used + j));
        for (int64_t i = 0; i < out.cols; ++i) o[i] += w[j] * e[i];
      }
      if (!shared.data) continue;
      const float* s = reinterpret_cast<const float*>(shared.row(t));
      float g = 1.0f;
      if (shared_gate.data) g = 1.0f / (1.0f + std::exp(-*reinterpret_cast<const float*>(shared_gate.row(t))));
      for (int64_t i = 0; i < out.cols; ++i) o[i] += g * s[i];
    }
  });
}

}  // namespace ember::ops
