// Perplexity and KL divergence: the statistics against hand computations, the compact base
// file against exact full-distribution KLD, and `ember perplexity` end to end against a
// golden value from an independent numpy reference (tools/ppl_reference.py).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <vector>

#include "eval/chunk_plan.h"
#include "eval/kld_stats.h"
#include "sampling/log_softmax.h"
#include "eval/logprob_store.h"
#include "eval/nll_stats.h"
#include "test_bench_cli.h"
#include "util/error.h"

using namespace ember;
using namespace ember::eval;

namespace {

std::vector<float> random_logits(std::mt19937& rng, int n, float spread) {
  std::normal_distribution<float> d(0.0f, spread);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

// KL(p || q) over full rows, straight from the definition in double precision.
double exact_kld(const std::vector<float>& lp_logits, const std::vector<float>& lq_logits) {
  auto log_softmax = [](const std::vector<float>& l) {
    double m = l[0];
    for (float x : l) m = std::max(m, double(x));
    double s = 0;
    for (float x : l) s += std::exp(double(x) - m);
    std::vector<double> out;
    for (float x : l) out.push_back(double(x) - m - std::log(s));
    return out;
  };
  const auto lp = log_softmax(lp_logits), lq = log_softmax(lq_logits);
  double k = 0;
  for (size_t i = 0; i < lp.size(); ++i) k += std::exp(lp[i]) * (lp[i] - lq[i]);
  return k;
}

double final_ppl(const std::string& out) {
  std::smatch m;
  static const std::regex re(R"(Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+))");
  return std::regex_search(out, m, re) ? std::stod(m[1]) : -1.0;
}

}  // namespace

TEST_CASE("chunk plan follows llama.cpp: n_ctx chunks, second half scored, >= 2 chunks") {
  const ChunkPlan p = make_chunk_plan(1000, 128, -1);
  CHECK(p.n_chunk == 7);
  CHECK(p.first == 64);
  CHECK(p.scored_per_chunk() == 63);
  CHECK(make_chunk_plan(1000, 128, 3).n_chunk == 3);
  CHECK(make_chunk_plan(1000, 128, 50).n_chunk == 7);
  CHECK_THROWS_AS(make_chunk_plan(255, 128, -1), Error);
  try {
    make_chunk_plan(200, 128, -1);
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("only 200 tokens") != std::string::npos);
    CHECK(e.kind() == ErrorKind::InvalidArgument);
  }
  const std::vector<int32_t> toks = {5, 6, 7, 8, 9, 10, 11, 12};
  const ChunkPlan small = make_chunk_plan(8, 4, -1);
  CHECK(chunk_input(toks, small, 1, true, 1) == std::vector<int32_t>{1, 10, 11, 12});
  CHECK(chunk_input(toks, small, 1, false, 1) == std::vector<int32_t>{9, 10, 11, 12});
}

TEST_CASE("perplexity and its error follow llama.cpp's formula") {
  const std::vector<double> nll = {1.0, 2.0, 4.0, 3.0};
  NllStats s;
  for (double x : nll) s.add(x);
  const double mean = 2.5, var = (1 + 4 + 16 + 9) / 4.0 - mean * mean;
  CHECK(s.ppl() == doctest::Approx(std::exp(mean)));
  CHECK(s.ppl_error() == doctest::Approx(std::exp(mean) * std::sqrt(var / 3.0)));
}

TEST_CASE("log-softmax row matches a direct computation") {
  std::mt19937 rng(7);
  const auto l = random_logits(rng, 1000, 5.0f);
  const LogSoftmaxRow row = log_softmax_row(l);
  double s = 0;
  for (float x : l) s += std::exp(double(x));
  CHECK(row.log_norm == doctest::Approx(std::log(s)).epsilon(1e-12));
  CHECK(l[size_t(row.argmax)] == *std::max_element(l.begin(), l.end()));
}

TEST_CASE("KLD of a distribution against itself is 0 with the same top token") {
  std::mt19937 rng(1);
  const int n_vocab = 300;
  RecordBuilder builder(n_vocab, 16, 16);
  KldAccumulator acc(n_vocab);
  for (int i = 0; i < 200; ++i) {
    const auto l = random_logits(rng, n_vocab, 3.0f);
    const int32_t target = int32_t(rng() % n_vocab);
    const LogProbRecord rec = builder.build(l, target, uint64_t(i));
    CHECK(rec.tail.size() == 16);
    acc.add(l, rec, target);
  }
  CHECK(acc.kld().value < 1e-6);
  CHECK(acc.same_top().value == 1.0);
  CHECK(std::abs(acc.p_diff().value) < 1e-6);
  CHECK(std::abs(acc.log_ppl_ratio().value) < 1e-6);
  CHECK(acc.report().find("Same top p: 100.000") != std::string::npos);
}

TEST_CASE("stored KLD: exact with the whole vocabulary, unbiased with top 32 + 32 tail samples") {
  std::mt19937 rng(3);
  const int n_vocab = 2000;
  RecordBuilder full(n_vocab, 0, 32), sampled(n_vocab, 32, 32);
  CHECK(full.top_k() == uint32_t(n_vocab));
  CHECK(full.tail_samples() == 0);
  // Peaked (spread 4) and flat (spread 1, where the top 32 hold little of the mass and the
  // tail carries most of the divergence) base distributions, each against a perturbed copy.
  for (const float spread : {4.0f, 1.0f}) {
    double sum_exact = 0, sum_full = 0, sum_sampled = 0, sum_top_only = 0;
    const int n = 300;
    for (int i = 0; i < n; ++i) {
      const auto p = random_logits(rng, n_vocab, spread);
      auto q = p;
      std::normal_distribution<float> noise(0.0f, 0.3f);
      for (float& x : q) x += noise(rng);
      const double exact = exact_kld(p, q);
      KldAccumulator a_full(n_vocab), a_sampled(n_vocab);
      const double k_full = a_full.add(q, full.build(p, 0, uint64_t(i)), 0);
      const LogProbRecord rec = sampled.build(p, 0, uint64_t(i));
      const double k_sampled = a_sampled.add(q, rec, 0);
      CHECK(k_full == doctest::Approx(exact).epsilon(1e-5));
      sum_exact += exact;
      sum_full += k_full;
      sum_sampled += k_sampled;
      LogProbRecord head_only = rec;
      head_only.tail = {};
      sum_top_only += KldAccumulator(n_vocab).add(q, head_only, 0);
    }
    CHECK(sum_full == doctest::Approx(sum_exact).epsilon(1e-5));
    CHECK(sum_sampled == doctest::Approx(sum_exact).epsilon(0.02));
    MESSAGE("spread " << spread << ": mean KLD exact " << sum_exact / n << ", top 32 + 32 samples " << sum_sampled / n
                      << ", top 32 alone " << sum_top_only / n);
  }
}

TEST_CASE("base file round-trips and rejects a truncated file") {
  namespace fs = std::filesystem;
  const fs::path path = ember_test::scratch_dir() / "roundtrip.kld";
  const ChunkPlan plan = make_chunk_plan(16, 8, -1);  // 2 chunks, 3 scored each
  std::vector<int32_t> tokens(16);
  for (int i = 0; i < 16; ++i) tokens[size_t(i)] = i % 10;
  LogProbHeader h;
  h.n_ctx = 8;
  h.n_vocab = 10;
  h.n_chunk = 2;
  h.top_k = 4;
  h.add_bos = 1;
  h.bos = 1;
  h.tail_samples = 3;
  std::mt19937 rng(5);
  RecordBuilder builder(10, 4, 3);
  std::vector<std::vector<float>> rows;
  {
    LogProbWriter w(path.string(), h, tokens);
    for (int i = 0; i < 6; ++i) {
      rows.push_back(random_logits(rng, 10, 2.0f));
      w.append(builder.build(rows.back(), 3, uint64_t(i)));
    }
    w.close();
  }
  CHECK(fs::file_size(path) == logprob_file_bytes(plan, 4, 3));
  const LogProbReader r(path.string());
  CHECK(r.n_records() == 6);
  CHECK(r.header().add_bos == 1);
  CHECK(std::vector<int32_t>(r.tokens().begin(), r.tokens().end()) == tokens);
  for (int i = 0; i < 6; ++i) {
    const LogProbRecord rec = r.record(i);
    const LogSoftmaxRow row = log_softmax_row(rows[size_t(i)]);
    CHECK(rec.log_p_target == doctest::Approx(log_prob(rows[size_t(i)], row, 3)));
    CHECK(rec.top[0].id == uint32_t(row.argmax));
    for (size_t k = 1; k < rec.top.size(); ++k) CHECK(rec.top[k].log_p <= rec.top[k - 1].log_p);
    REQUIRE(rec.tail.size() == 3);
    for (const TopEntry& t : rec.tail) {
      CHECK(t.log_p <= rec.top.back().log_p);  // drawn from outside the top 4
      CHECK(t.log_p == doctest::Approx(log_prob(rows[size_t(i)], row, int32_t(t.id))));
    }
  }
  fs::resize_file(path, fs::file_size(path) - 3);
  CHECK_THROWS_AS(LogProbReader(path.string()), Error);
}

// ---- end to end: ember perplexity on the converted aidreams260K model -------------------

namespace {
const std::string kText = std::string(EMBER_SOURCE_DIR) + "/tests/data/ppl_poems.txt";
// tools/ppl_reference.py ../shared/models/aidreams260K.bin ../shared/models/tok512.bin
//   tests/data/ppl_poems.txt -c 128     (numpy, the llama2.c checkpoint, run.c's tokenizer)
constexpr double kGoldenPpl128 = 154.37706360;
}  // namespace

TEST_CASE("ember perplexity matches the numpy reference and does not depend on -b") {
  std::string log;
  const std::string model = ember_test::aidreams_gguf(&log);
  INFO("convert output: " << log);
  REQUIRE(!model.empty());
  const auto big = ember_test::run_ember("perplexity -m '" + model + "' -f '" + kText + "' -c 128 -b 512 -t 2");
  INFO(big.out << big.err);
  REQUIRE(big.exit_code == 0);
  CHECK(big.out.find("[1]") != std::string::npos);
  CHECK(big.out.find("[15]") != std::string::npos);
  const double ppl = final_ppl(big.out);
  CHECK(ppl == doctest::Approx(kGoldenPpl128).epsilon(2e-4));

  const auto small = ember_test::run_ember("perplexity -m '" + model + "' -f '" + kText + "' -c 128 -b 16 -t 2");
  REQUIRE(small.exit_code == 0);
  CHECK(final_ppl(small.out) == doctest::Approx(ppl).epsilon(1e-5));

  // Chunks decoded side by side as sequences (-np) print exactly what one at a time prints.
  const auto one = ember_test::run_ember("perplexity -m '" + model + "' -f '" + kText + "' -c 128 -b 128 -np 1 -t 2");
  const auto five = ember_test::run_ember("perplexity -m '" + model + "' -f '" + kText + "' -c 128 -b 600 -np 5 -t 2");
  REQUIRE(one.exit_code == 0);
  REQUIRE(five.exit_code == 0);
  CHECK(five.err.find("5 chunks at once") != std::string::npos);
  CHECK(one.out == five.out);
}

TEST_CASE("ember perplexity refuses a text shorter than two chunks") {
  const std::string model = ember_test::aidreams_gguf();
  REQUIRE(!model.empty());
  const auto r = ember_test::run_ember("perplexity -m '" + model + "' -f '" + kText + "' -c 1024 -t 1");
  CHECK(r.exit_code != 0);
  CHECK(r.err.find("at least 2048") != std::string::npos);
}

TEST_CASE("ember perplexity --kl-divergence of a model against itself is 0, same top p 100%") {
  const std::string model = ember_test::aidreams_gguf();
  REQUIRE(!model.empty());
  const std::string base = (ember_test::scratch_dir() / "self.kld").string();
  const auto w = ember_test::run_ember("perplexity -m '" + model + "' -f '" + kText + "' -c 64 -t 2 --kl-divergence-base '" + base + "'");
  INFO(w.out << w.err);
  REQUIRE(w.exit_code == 0);
  const auto k = ember_test::run_ember("perplexity -m '" + model + "' --kl-divergence-base '" + base + "' --kl-divergence -t 2");
  INFO(k.out << k.err);
  REQUIRE(k.exit_code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(k.out, m, std::regex(R"(Mean    KLD:\s+([-0-9.]+))")));
  CHECK(std::abs(std::stod(m[1])) < 1e-5);
  CHECK(k.out.find("Same top p: 100.000") != std::string::npos);
  REQUIRE(std::regex_search(k.out, m, std::regex(R"(Mean PPL\(Q\)/PPL\(base\)\s+:\s+([0-9.]+))")));
  CHECK(std::stod(m[1]) == doctest::Approx(1.0).epsilon(1e-5));
  // PPL(base) in the report equals the perplexity printed while writing the base.
  REQUIRE(std::regex_search(k.out, m, std::regex(R"(Mean PPL\(base\)\s+:\s+([0-9.]+))")));
  CHECK(std::stod(m[1]) == doctest::Approx(final_ppl(w.out)).epsilon(1e-4));
}

// aidreams' heads of 16 are narrower than a q8_0/q4_0 block, so a synth model with aidreams'
// vocabulary and heads of 32 measures what the KV type costs.
TEST_CASE("ember perplexity -ctk/-ctv measures a quantized KV cache") {
  const std::string vocab = ember_test::aidreams_gguf();
  REQUIRE(!vocab.empty());
  const std::string model = (ember_test::scratch_dir() / "kv_types.gguf").string();
  const auto synth = ember_test::run_ember("synth --vocab-from '" + vocab + "' -o '" + model +
                                           "' --type f32 --dim 64 --layers 2 --heads 2 --kv-heads 2 --ff 128 "
                                           "--ctx 256 --seed 3 -t 2");
  REQUIRE_MESSAGE(synth.exit_code == 0, synth.err);
  const std::string base = "perplexity -m '" + model + "' -f '" + kText + "' -c 64 --chunks 4 -t 2";
  const auto f16 = ember_test::run_ember(base);
  const auto quant = ember_test::run_ember(base + " -ctk q8_0 -ctv q4_0");
  INFO(f16.err << quant.err);
  REQUIRE(f16.exit_code == 0);
  REQUIRE(quant.exit_code == 0);
  CHECK(quant.err.find("K Q8_0, V Q4_0") != std::string::npos);  // the context's memory plan line
  const double p16 = final_ppl(f16.out), pq = final_ppl(quant.out);
  CHECK(pq > 0.0);
  CHECK(pq != p16);
  CHECK(pq == doctest::Approx(p16).epsilon(0.05));  // close: the model is the same

  const auto bad = ember_test::run_ember(base + " -ctv q5_9");
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("-ctv 'q5_9': expected one of f32, f16, q8_0, q4_0") != std::string::npos);
}
