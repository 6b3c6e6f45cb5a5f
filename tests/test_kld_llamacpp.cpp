// The base file llama.cpp's `llama-perplexity --kl-divergence-base` writes, read back by
// ember's --kl-divergence: a file laid out and quantized as llama.cpp's tools/perplexity
// does (written here from its description, independently of the reader), against the exact
// full-distribution statistics.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "eval/kld_stats.h"
#include "eval/llamacpp_logits.h"
#include "eval/logprob_store.h"
#include "sampling/log_softmax.h"
#include "test_bench_cli.h"
#include "util/error.h"

using namespace ember;
using namespace ember::eval;

namespace {

// llama.cpp's row: logits clamped at max - 16, log-probabilities as uint16 steps of
// (max - min) / 65535 above the floor, two floats (scale, min_log_prob) in front.
std::vector<uint16_t> llamacpp_row(const std::vector<float>& logits) {
  const int n_vocab = int(logits.size());
  float max_logit = logits[0], min_logit = logits[0];
  for (float x : logits) max_logit = std::max(max_logit, x), min_logit = std::min(min_logit, x);
  min_logit = std::max(min_logit, max_logit - 16);
  double sum_exp = 0;
  for (float x : logits) sum_exp += std::exp(x - max_logit);
  const float log_sum_exp = float(std::log(sum_exp));
  const float min_log_prob = min_logit - max_logit - log_sum_exp;
  const float scale = (max_logit - min_logit) / 65535.f;
  std::vector<uint16_t> row(size_t(2 * ((n_vocab + 1) / 2) + 4), 0);
  std::memcpy(row.data(), &scale, 4);
  std::memcpy(row.data() + 2, &min_log_prob, 4);
  for (int i = 0; i < n_vocab; ++i)
    if (scale != 0 && logits[size_t(i)] > min_logit)
      row[size_t(4 + i)] = uint16_t(std::lround((logits[size_t(i)] - min_logit) / scale));
  return row;
}

struct Fixture {
  std::filesystem::path path;
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> rows;  // the base logits of every scored position
};

// 3 chunks of 16 tokens over a 300-token vocabulary: 7 scored positions per chunk.
Fixture write_llamacpp_file(const char* name, float spread) {
  Fixture f;
  f.path = ember_test::scratch_dir() / name;
  const uint32_t n_ctx = 16;
  const int32_t n_vocab = 300, n_chunk = 3;
  std::mt19937 rng(11);
  for (int i = 0; i < int(n_ctx) * n_chunk; ++i) f.tokens.push_back(int32_t(rng() % n_vocab));
  std::ofstream out(f.path, std::ios::binary);
  out.write("_logits_", 8);
  out.write(reinterpret_cast<const char*>(&n_ctx), 4);
  out.write(reinterpret_cast<const char*>(&n_vocab), 4);
  out.write(reinterpret_cast<const char*>(&n_chunk), 4);
  out.write(reinterpret_cast<const char*>(f.tokens.data()), std::streamsize(f.tokens.size() * 4));
  std::normal_distribution<float> d(0.0f, spread);
  for (int i = 0; i < n_chunk * 7; ++i) {
    std::vector<float> logits(static_cast<size_t>(n_vocab));
    for (float& x : logits) x = d(rng);
    const std::vector<uint16_t> row = llamacpp_row(logits);
    out.write(reinterpret_cast<const char*>(row.data()), std::streamsize(row.size() * 2));
    f.rows.push_back(std::move(logits));
  }
  return f;
}

}  // namespace

TEST_CASE("llama.cpp base file: tokens, targets and distributions read back") {
  const Fixture f = write_llamacpp_file("llamacpp.kld", 3.0f);
  const std::unique_ptr<KldBase> base = open_kld_base(f.path.string());
  CHECK(!base->stores_bos());
  CHECK(base->plan().n_chunk == 3);
  CHECK(base->plan().scored_per_chunk() == 7);
  REQUIRE(base->n_records() == 21);
  CHECK(std::vector<int32_t>(base->tokens().begin(), base->tokens().end()) == f.tokens);
  for (int64_t i = 0; i < base->n_records(); ++i) {
    const std::vector<float>& logits = f.rows[size_t(i)];
    const LogSoftmaxRow row = log_softmax_row(logits);
    const int32_t target = f.tokens[size_t((i / 7) * 16 + 8 + 1 + i % 7)];
    const LogProbRecord rec = base->record(i);
    // One uint16 step is 16 / 65535 of a log-probability at most.
    CHECK(rec.log_p_target == doctest::Approx(log_prob(logits, row, target)).epsilon(3e-4));
    CHECK(rec.top[0].id == uint32_t(row.argmax));
    CHECK(rec.tail.empty());
  }
}

TEST_CASE("llama.cpp base file: KLD of the same logits is ~0, of perturbed logits the exact value") {
  const Fixture f = write_llamacpp_file("llamacpp_kld.kld", 2.0f);
  const std::unique_ptr<KldBase> base = open_kld_base(f.path.string());
  std::mt19937 rng(4);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  KldAccumulator same(300), perturbed(300);
  double exact_sum = 0;
  for (int64_t i = 0; i < base->n_records(); ++i) {
    const std::vector<float>& p = f.rows[size_t(i)];
    same.add(p, base->record(i), 0);
    std::vector<float> q = p;
    for (float& x : q) x += noise(rng);
    perturbed.add(q, base->record(i), 0);
    const LogSoftmaxRow rp = log_softmax_row(p), rq = log_softmax_row(q);
    for (int t = 0; t < 300; ++t) {
      const double lp = log_prob(p, rp, t);
      exact_sum += std::exp(lp) * (lp - log_prob(q, rq, t));
    }
  }
  // llama.cpp's uint16 steps (16/65535 of a log-probability) leave a few 1e-6 of KLD.
  CHECK(same.kld().value < 2e-5);
  CHECK(same.same_top().value == 1.0);
  const double exact = exact_sum / double(base->n_records());
  CHECK(perturbed.kld().value == doctest::Approx(exact).epsilon(1e-3));
}

TEST_CASE("llama.cpp base file: a truncated or foreign file is refused with its path") {
  const Fixture f = write_llamacpp_file("llamacpp_bad.kld", 2.0f);
  std::filesystem::resize_file(f.path, std::filesystem::file_size(f.path) - 2);
  CHECK_THROWS_WITH_AS(open_kld_base(f.path.string()), doctest::Contains("implies"), Error);
  std::ofstream(f.path, std::ios::binary) << "GGUFxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
  CHECK_THROWS_WITH_AS(open_kld_base(f.path.string()), doctest::Contains("not a KL-divergence base file"), Error);
}
