// Speculative sampling is exact: the distribution of speculatively sampled continuations
// equals the target's. For short continuations (2-3 tokens) of a prompt the test computes
// the target's exact sequence probabilities by enumerating every token the sampler chain
// keeps (top-k/top-p/min-p bound the tree), draws many continuations with a seeded
// speculative decoder, and applies Pearson's chi-square test. Deterministic by seed. A
// negative control (continuations sampled from the draft alone) must fail the same test, so
// the test can tell distributions apart.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "engine/session.h"
#include "sampling/sampler_chain.h"
#include "test_speculative_models.h"

using namespace ember;
using namespace ember::test;

namespace {

using Continuation = std::vector<int32_t>;

std::vector<int32_t> eog_ids(const Tokenizer& tok) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < tok.n_vocab(); ++id)
    if (tok.is_eog(id)) ids.push_back(id);
  return ids;
}

// P(continuation) for every continuation of `length` tokens with non-zero probability, as
// plain sampling with `params` (end-of-generation tokens banned, as --ignore-eos) gives it.
void enumerate(Context& ctx, SamplerChain chain, const std::vector<int32_t>& banned, std::span<const float> logits,
               int length, Continuation& prefix, double prob, std::map<Continuation, double>& out) {
  std::vector<float> masked(logits.begin(), logits.end());
  for (int32_t id : banned) masked[static_cast<size_t>(id)] = -INFINITY;
  const Candidates p = chain.apply(masked);
  for (const TokenCandidate& c : p.items) {
    if (c.p <= 0.0f) continue;
    prefix.push_back(c.id);
    if (static_cast<int>(prefix.size()) == length) {
      out[prefix] += prob * c.p;
    } else {
      SamplerChain next = chain;
      next.accept(c.id);
      Batch b;
      b.add(c.id, -1, 0, true);
      const auto l = ctx.decode(b);
      const std::vector<float> copy(l.begin(), l.end());
      enumerate(ctx, next, banned, copy, length, prefix, prob * c.p, out);
      ctx.kv_rollback(0, 1);
    }
    prefix.pop_back();
  }
}

std::map<Continuation, double> exact_distribution(const Model& model, const std::vector<int32_t>& prompt,
                                              const SamplingParams& params, int length, ThreadPool& pool) {
  Context ctx(model, spec_ctx(), pool);
  Batch b;
  for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], -1, 0, i + 1 == prompt.size());
  const auto l = ctx.decode(b);
  const std::vector<float> logits(l.begin(), l.end());
  SamplerChain chain(params, ctx.n_ctx());
  for (int32_t t : prompt) chain.accept(t);
  std::map<Continuation, double> out;
  Continuation prefix;
  enumerate(ctx, chain, eog_ids(*spec_models().tok), logits, length, prefix, 1.0, out);
  return out;
}

struct ChiSquare {
  double statistic = 0;
  int df = 0;
  double critical = 0;   // upper 0.05% point (Wilson-Hilferty)
  int impossible = 0;    // draws of a sequence with probability 0
};

// Cells with an expected count >= 5 stand alone; the rest are pooled into one cell.
ChiSquare chi_square(const std::map<Continuation, double>& exact, const std::map<Continuation, int>& observed, int n) {
  ChiSquare r;
  double pooled_expected = 0, pooled_observed = 0;
  int cells = 0;
  for (const auto& [seq, count] : observed)
    if (!exact.count(seq)) r.impossible += count;
  for (const auto& [seq, prob] : exact) {
    const double e = prob * n;
    const auto it = observed.find(seq);
    const double o = it == observed.end() ? 0.0 : it->second;
    if (e >= 5.0) {
      r.statistic += (o - e) * (o - e) / e;
      ++cells;
    } else {
      pooled_expected += e;
      pooled_observed += o;
    }
  }
  if (pooled_expected >= 1.0) {
    r.statistic += (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) / pooled_expected;
    ++cells;
  }
  r.df = std::max(1, cells - 1);
  const double z = 3.29, k = r.df;
  r.critical = k * std::pow(1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k)), 3.0);
  return r;
}

struct Setting {
  const char* name;
  const char* prompt;
  int length;         // tokens per continuation
  const Model* draft; // nullptr: n-gram
  SamplingParams params;
};

SamplingParams sampling(float temp, int top_k, float top_p, float min_p, float repeat_penalty = 1.0f) {
  SamplingParams p;
  p.temperature = temp;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.repeat_penalty = repeat_penalty;
  p.seed = 20261129;
  return p;
}

}  // namespace

TEST_CASE("speculative sampling draws continuations from exactly the target's distribution") {
  SpecModels& m = spec_models();
  ThreadPool pool(1);
  const int n_draws = 2000;
  // Continuations of 3-4 tokens: the first comes from the prompt's logits, the rest from
  // rounds of 1-2 drafted tokens (all-accepted rounds add the bonus token).
  const char* copy_prompt = "The dissolve within me, a soft whispers of vectors. The dissolve";
  const Setting settings[] = {
      {"T=1 top-k 3, q4_0 draft", "The", 3, m.q4.get(), sampling(1.0f, 3, 1.0f, 0.0f)},
      {"T=0.7 top-k 5 top-p 0.9, q4_0 draft", "Once upon a time", 3, m.q4.get(), sampling(0.7f, 5, 0.9f, 0.0f)},
      {"T=1.5 top-p 0.95 min-p 0.05, q4_0 draft", "The sky", 3, m.q4.get(), sampling(1.5f, 0, 0.95f, 0.05f)},
      // A draft that (almost) never agrees: every token comes from the residual max(0, p - q).
      {"T=1 top-k 4, noise draft", "The sky", 3, m.noise.get(), sampling(1.0f, 4, 1.0f, 0.0f)},
      {"T=1 top-k 2 repeat-penalty 1.5, 4 tokens, q4_0 draft", "The", 4, m.q4.get(),
       sampling(1.0f, 2, 1.0f, 0.0f, 1.5f)},
      {"T=1 top-k 3, 4 tokens, n-gram draft", copy_prompt, 4, nullptr, sampling(1.0f, 3, 1.0f, 0.0f)},
  };
  for (const Setting& s : settings) {
    const std::string name = s.name;
    CAPTURE(name);
    const std::vector<int32_t> prompt = m.tok->encode(s.prompt, true, false);
    const std::map<Continuation, double> exact = exact_distribution(*m.target, prompt, s.params, s.length, pool);
    double total = 0;
    for (const auto& [seq, p] : exact) total += p;
    CHECK(total == doctest::Approx(1.0).epsilon(1e-4));

    // Every draw continues the same chain (its random stream), as a chat's turns do.
    Context target(*m.target, spec_ctx(), pool);
    std::unique_ptr<Context> draft_ctx = s.draft ? std::make_unique<Context>(*s.draft, spec_ctx(), pool) : nullptr;
    SamplerChain sampler(s.params, target.n_ctx());
    Session session(target, *m.tok, sampler, draft_ctx.get());
    const SequenceDrafting drafting{.ngram = s.draft ? 0 : 2, .max = 4, .fixed = true, .model = s.draft != nullptr};
    std::map<Continuation, int> observed;
    DraftTally totals;
    for (int i = 0; i < n_draws; ++i) {
      const GenerationResult r =
          session.generate(prompt, {.max_tokens = s.length, .ignore_eos = true, .draft = drafting}, {});
      ++observed[r.tokens];
      totals.drafted += r.draft.drafted;
      totals.accepted += r.draft.accepted;
    }
    const ChiSquare chi = chi_square(exact, observed, n_draws);
    MESSAGE(name << ": " << exact.size() << " sequences, chi2 " << chi.statistic << " (df " << chi.df
                 << ", critical " << chi.critical << "), drafted " << totals.drafted << ", accepted "
                 << totals.accepted);
    CHECK(totals.drafted > n_draws / 2);      // the rule was exercised...
    if (s.draft != m.noise.get()) CHECK(totals.accepted > 0);  // ...with acceptances
    CHECK(totals.accepted < totals.drafted);  // ...and rejections
    CHECK(chi.impossible == 0);
    CHECK(chi.statistic < chi.critical);
  }
}

TEST_CASE("negative control: the draft's own distribution fails the same test") {
  // Always accepting would give the draft's distribution. The q4_0 model is close to the
  // target (it is a good draft) yet the test must tell them apart.
  SpecModels& m = spec_models();
  ThreadPool pool(1);
  const SamplingParams params = sampling(1.0f, 3, 1.0f, 0.0f);
  const std::vector<int32_t> prompt = m.tok->encode("The", true, false);
  const std::map<Continuation, double> exact = exact_distribution(*m.target, prompt, params, 3, pool);
  Context ctx(*m.q4, spec_ctx(), pool);
  SamplerChain sampler(params, ctx.n_ctx());
  Session session(ctx, *m.tok, sampler);
  std::map<Continuation, int> observed;
  const int n_draws = 2000;
  for (int i = 0; i < n_draws; ++i) ++observed[session.generate(prompt, {.max_tokens = 3, .ignore_eos = true}, {}).tokens];
  const ChiSquare chi = chi_square(exact, observed, n_draws);
  MESSAGE("q4_0 model vs target: chi2 " << chi.statistic << " (critical " << chi.critical << "), impossible "
                                        << chi.impossible);
  CHECK((chi.statistic > chi.critical || chi.impossible > 0));
}
