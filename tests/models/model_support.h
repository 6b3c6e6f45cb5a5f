// Shared helpers of tests/test_model_*.cpp: the tiny models and their reference goldens
// (written by tools/reference/make_tiny_models.py), and small drivers around Context.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "backend/cpu/thread_pool.h"
#include "model/model.h"

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

inline Golden load_golden(const std::string& arch) {
  const std::string path = std::string(EMBER_SOURCE_DIR) + "/tests/golden/tiny-" + arch + ".logits";
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

inline ContextOptions quiet(ContextOptions o) {
  o.print_plan = false;
  return o;
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

}  // namespace ember::test
