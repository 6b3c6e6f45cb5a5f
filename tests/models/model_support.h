// Shared helpers of tests/test_model_*.cpp: the tiny models and their reference goldens
// (written by tools/reference/make_tiny_models.py), and small drivers around Context.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "util/thread_pool.h"
#include "model/model.h"

#include <doctest/doctest.h>

namespace ember::test {

inline std::string tiny_model(const std::string& arch) {
  return std::string(EMBER_SOURCE_DIR) + "/tests/models/tiny-" + arch + ".gguf";
}

// Reference logits of the numpy implementation (tools/reference/reference.py).
struct Golden {
  std::vector<int32_t> tokens;
  int n_vocab = 0;
  std::vector<float> logits;  // tokens.size() x n_vocab
  const float* row(size_t t) const { return logits.data() + t * n_vocab; }
};

// tests/golden/<stem>.logits
inline Golden load_golden_file(const std::string& stem) {
  const std::string path = std::string(EMBER_SOURCE_DIR) + "/tests/golden/" + stem + ".logits";
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  char magic[4];
  int32_t hdr[3];
  f.read(magic, 4);
  f.read(reinterpret_cast<char*>(hdr), sizeof hdr);
  if (std::memcmp(magic, "EMBG", 4) != 0 || hdr[0] != 1) throw std::runtime_error("bad golden " + path);
  Golden g;
  g.tokens.resize(hdr[1]);
  g.n_vocab = hdr[2];
  g.logits.resize(static_cast<size_t>(hdr[1]) * hdr[2]);
  f.read(reinterpret_cast<char*>(g.tokens.data()), g.tokens.size() * sizeof(int32_t));
  f.read(reinterpret_cast<char*>(g.logits.data()), g.logits.size() * sizeof(float));
  if (!f) throw std::runtime_error("truncated golden " + path);
  return g;
}

inline Golden load_golden(const std::string& arch) { return load_golden_file("tiny-" + arch); }

inline ContextOptions quiet(ContextOptions o) {
  o.print_plan = false;
  return o;
}

// Quiet options for n_seq sequences of up to 256 tokens over a pool of kv_blocks (0: n_ctx
// each), as the scheduler tests use them.
inline ContextOptions options(int n_seq, int kv_blocks = 0) {
  ContextOptions o;
  o.n_ctx = 256;
  o.n_seq = n_seq;
  o.kv_blocks = kv_blocks;
  return quiet(o);
}

inline LoadOptions quiet_load() {
  LoadOptions o;
  o.print_plan = false;
  return o;
}

// Feeds tokens[begin, end) of sequence `seq` as one batch asking for every row's logits.
inline std::vector<float> run_batch(Context& ctx, const std::vector<int32_t>& tokens, size_t begin, size_t end,
                                    int seq = 0) {
  Batch b;
  for (size_t i = begin; i < end; ++i) b.add(tokens[i], -1, seq, true);
  auto span = ctx.decode(b);
  return {span.begin(), span.end()};
}

// Feeds tokens[begin, end) one decode() call per token.
inline std::vector<float> run_one_by_one(Context& ctx, const std::vector<int32_t>& tokens, size_t begin, size_t end,
                                         int seq = 0) {
  std::vector<float> out;
  for (size_t i = begin; i < end; ++i) {
    Batch b;
    b.add(tokens[i], -1, seq, true);
    auto span = ctx.decode(b);
    out.insert(out.end(), span.begin(), span.end());
  }
  return out;
}

inline int argmax(const float* x, int n) { return static_cast<int>(std::max_element(x, x + n) - x); }

struct Agreement {
  double max_abs = 0;     // max |a - b| over all logits
  double max_ref = 0;     // max |b| (scale of the logits)
  double top1 = 0;        // fraction of rows with the same argmax
};

inline Agreement compare(const std::vector<float>& a, const float* b, size_t rows, int n_vocab) {
  Agreement r;
  size_t same = 0;
  for (size_t t = 0; t < rows; ++t) {
    const float* x = a.data() + t * n_vocab;
    const float* y = b + t * n_vocab;
    for (int j = 0; j < n_vocab; ++j) {
      r.max_abs = std::max(r.max_abs, std::fabs(static_cast<double>(x[j]) - y[j]));
      r.max_ref = std::max(r.max_ref, std::fabs(static_cast<double>(y[j])));
      if (!std::isfinite(x[j])) r.max_abs = INFINITY;
    }
    same += argmax(x, n_vocab) == argmax(y, n_vocab);
  }
  r.top1 = rows ? static_cast<double>(same) / rows : 1.0;
  return r;
}

// Rows where the reference's best logit leads the runner-up by more than `margin`: there
// the argmax is not a near-tie that any rounding could flip, so the engine must agree.
inline double decided_top1(const std::vector<float>& got, const Golden& g, double margin) {
  size_t n = 0, same = 0;
  const size_t rows = got.size() / g.n_vocab;
  for (size_t t = 0; t < rows; ++t) {
    std::vector<float> r(g.row(t), g.row(t) + g.n_vocab);
    std::partial_sort(r.begin(), r.begin() + 2, r.end(), std::greater<float>());
    if (r[0] - r[1] <= margin) continue;
    ++n;
    same += argmax(got.data() + t * g.n_vocab, g.n_vocab) == argmax(g.row(t), g.n_vocab);
  }
  return n ? static_cast<double>(same) / n : 1.0;
}

// Runs a golden's tokens (the first half as one prefill, the rest one decode
// step at a time) on the model at `path` loaded with `load` and checks the logits against the
// reference; returns them.
inline std::vector<float> check_model(const std::string& path, const Golden& g, const std::string& arch,
                                      double rel_tol, DType kv_type = DType::F16, const LoadOptions& load = quiet_load()) {
  auto model = Model::load(path, load);
  REQUIRE(model->hparams().n_vocab == g.n_vocab);
  ThreadPool pool(1);
  ContextOptions o;
  o.n_ctx = 256;
  o.n_ubatch = 64;  // > window for gemma3 (24), so the sliding rings wrap during prefill
  o.k_type = o.v_type = kv_type;
  Context ctx(*model, quiet(o), pool);
  const size_t n = g.tokens.size(), half = n / 2;
  std::vector<float> logits = run_batch(ctx, g.tokens, 0, half);
  std::vector<float> rest = run_one_by_one(ctx, g.tokens, half, n);
  logits.insert(logits.end(), rest.begin(), rest.end());

  const Agreement all = compare(logits, g.row(0), n, g.n_vocab);
  const Agreement pre = compare({logits.begin(), logits.begin() + half * g.n_vocab}, g.row(0), half, g.n_vocab);
  const Agreement dec = compare({logits.begin() + half * g.n_vocab, logits.end()}, g.row(half), n - half, g.n_vocab);
  const double decided = decided_top1(logits, g, 2.0 * all.max_abs);
  MESSAGE(arch << ": " << n << " positions, max |logit err| " << all.max_abs << " (logit scale " << all.max_ref
               << ", prefill " << pre.max_abs << ", decode " << dec.max_abs << "), top-1 agreement " << all.top1
               << ", on rows with a top-2 margin > 2x that error " << decided);
  CHECK(all.max_abs <= rel_tol * all.max_ref);
  CHECK(all.top1 >= 0.95);
  CHECK(decided == 1.0);
  return logits;
}

inline std::vector<float> check_family(const std::string& arch, double rel_tol, DType kv_type = DType::F16,
                                       const LoadOptions& load = quiet_load()) {
  return check_model(tiny_model(arch), load_golden(arch), arch, rel_tol, kv_type, load);
}

}  // namespace ember::test
