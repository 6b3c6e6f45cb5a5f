// Speculative decoding: greedy output identical to plain decoding with drafts that agree
// often and rarely (and n-gram drafts), batch-vs-single logits bit for bit (what the greedy
// identity rests on), the caches after a speculative run equal a plain run's, vocabulary
// compatibility, n-gram proposals and the draft-length controller.
#include <doctest/doctest.h>

#include <cstring>

#include "engine/draft_model.h"
#include "engine/ngram_draft.h"
#include "engine/speculative.h"
#include "engine/vocab_compat.h"
#include "sampling/sampler_chain.h"
#include "test_speculative_models.h"
#include "util/error.h"

using namespace ember;
using namespace ember::test;

namespace {

std::vector<int32_t> prompt_tokens(const char* text) {
  return spec_models().tok->encode(text, /*add_special=*/true, /*parse_special=*/false);
}

SamplingParams greedy(float repeat_penalty = 1.0f) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.repeat_penalty = repeat_penalty;
  p.seed = 1;
  return p;
}

// Plain greedy decoding through Session: the reference the speculative output must equal.
GenerationResult plain_run(const Model& model, const std::vector<int32_t>& prompt, const SamplingParams& params, int n,
                           ThreadPool& pool) {
  Context ctx(model, spec_ctx(), pool);
  SamplerChain sampler(params, ctx.n_ctx());
  Session session(ctx, *spec_models().tok, sampler);
  return session.generate(prompt, {.max_tokens = n, .ignore_eos = true}, {});
}

std::vector<float> decode_rows(Context& ctx, std::span<const int32_t> tokens) {
  Batch b;
  for (int32_t t : tokens) b.add(t, -1, 0, true);
  const auto l = ctx.decode(b);
  return {l.begin(), l.end()};
}

bool bit_equal(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("speculative: a verify batch gives bitwise the logits of single-token steps") {
  SpecModels& m = spec_models();
  const std::vector<int32_t> prompt = prompt_tokens("The little cat sat on the warm mat and looked at the stars");
  for (const Model* model : {m.target.get(), m.q8.get(), m.gqa.get()}) {
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      Context batched(*model, spec_ctx(), pool), single(*model, spec_ctx(), pool);
      const int rows = max_verify_rows(batched);
      CAPTURE(threads);
      CAPTURE(rows);
      CHECK(rows >= 2);
      const size_t n_vocab = static_cast<size_t>(batched.n_vocab());
      const std::span<const int32_t> head(prompt.data(), 5);
      decode_rows(batched, head);
      decode_rows(single, head);
      const size_t n = std::min<size_t>(static_cast<size_t>(rows), prompt.size() - 5);
      const std::vector<float> all = decode_rows(batched, std::span(prompt).subspan(5, n));
      for (size_t i = 0; i < n; ++i) {
        const std::vector<float> one = decode_rows(single, std::span(prompt).subspan(5 + i, 1));
        CHECK(bit_equal(std::span(all).subspan(i * n_vocab, n_vocab), one));
      }
    }
  }
}

TEST_CASE("speculative: greedy output is identical to plain decoding") {
  SpecModels& m = spec_models();
  ThreadPool pool(2);
  const std::vector<int32_t> prompt = prompt_tokens("The");
  struct Case {
    const char* name;
    const Model* target;
    const Model* draft;  // nullptr: n-gram drafting
    float repeat_penalty;
    bool adaptive;
    double min_acceptance, max_acceptance;
  };
  const Case cases[] = {
      {"same model", m.target.get(), m.target.get(), 1.0f, false, 1.0, 1.0},
      {"q8_0 draft", m.target.get(), m.q8.get(), 1.0f, false, 0.8, 1.0},
      {"q8_0 draft, repeat penalty", m.target.get(), m.q8.get(), 1.3f, false, 0.7, 1.0},
      {"q8_0 draft, adaptive", m.target.get(), m.q8.get(), 1.0f, true, 0.0, 1.0},
      {"noise draft", m.target.get(), m.noise.get(), 1.0f, false, 0.0, 0.3},
      {"synth target, aidreams draft", m.noise.get(), m.target.get(), 1.0f, false, 0.0, 0.3},
      {"n-gram", m.target.get(), nullptr, 1.0f, false, 0.0, 1.0},
      {"n-gram, adaptive (shadow proposals while off)", m.target.get(), nullptr, 1.0f, true, 0.0, 1.0},
      {"n-gram, synth target", m.noise.get(), nullptr, 1.0f, false, 0.0, 1.0},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    const int n = 96;
    const GenerationResult want = plain_run(*c.target, prompt, greedy(c.repeat_penalty), n, pool);
    REQUIRE(want.tokens.size() == static_cast<size_t>(n));

    Context target(*c.target, spec_ctx(), pool);
    SamplerChain sampler(greedy(c.repeat_penalty), target.n_ctx());
    std::unique_ptr<Context> draft_ctx;
    std::unique_ptr<DraftSource> source;
    if (c.draft) {
      draft_ctx = std::make_unique<Context>(*c.draft, spec_ctx(), pool);
      source = std::make_unique<DraftModel>(*draft_ctx, sampler);
    } else {
      source = std::make_unique<NgramDraft>(3);
    }
    SpeculativeDecoder spec(target, *m.tok, sampler, *source, {.min = 1, .max = 6, .adaptive = c.adaptive});
    const SpeculativeResult got = spec.generate(prompt, {.max_tokens = n, .ignore_eos = true}, {});
    CHECK(got.generation.tokens == want.tokens);
    CHECK(got.generation.text == want.text);
    MESSAGE(c.name << ": drafted " << got.spec.drafted << ", accepted " << got.spec.accepted << ", passes "
                   << got.spec.rounds << " for " << n << " tokens");
    if (!c.adaptive && c.draft) CHECK(got.spec.drafted > 0);
    CHECK(got.spec.acceptance_rate() >= c.min_acceptance);
    CHECK(got.spec.acceptance_rate() <= c.max_acceptance);
    CHECK(got.spec.rounds <= n);
    // The cache holds what plain decoding's holds: prompt + every generated token but the last.
    std::vector<int32_t> held = prompt;
    held.insert(held.end(), want.tokens.begin(), want.tokens.end() - 1);
    CHECK(spec.cached_tokens() == held);
    CHECK(target.kv_n_tokens(0) == static_cast<int>(held.size()));
  }
}

TEST_CASE("speculative: the target cache after rejections equals a plain run's, bit for bit") {
  SpecModels& m = spec_models();
  ThreadPool pool(1);
  const std::vector<int32_t> prompt = prompt_tokens("Once upon a time");
  SamplingParams params;
  params.temperature = 1.0f;
  params.top_k = 20;
  params.seed = 5;
  Context target(*m.target, spec_ctx(), pool), draft(*m.noise, spec_ctx(), pool);
  SamplerChain sampler(params, target.n_ctx());
  DraftModel source(draft, sampler);
  SpeculativeDecoder spec(target, *m.tok, sampler, source, {.min = 4, .max = 4, .adaptive = false});
  const SpeculativeResult r = spec.generate(prompt, {.max_tokens = 40, .ignore_eos = true}, {});
  REQUIRE(r.spec.drafted > r.spec.accepted);  // rejections (and rollbacks) happened
  const std::vector<int32_t>& held = spec.cached_tokens();
  REQUIRE(target.kv_n_tokens(0) == static_cast<int>(held.size()));

  // A fresh context decoding the same tokens one by one, then one probe token in both.
  Context plain(*m.target, spec_ctx(), pool);
  for (int32_t t : held) decode_rows(plain, std::span(&t, 1));
  const int32_t probe = r.generation.tokens.back();
  CHECK(bit_equal(decode_rows(target, std::span(&probe, 1)), decode_rows(plain, std::span(&probe, 1))));

  // A second request reuses the common prefix and continues as a fresh run would.
  const SpeculativeResult again = spec.generate(prompt, {.max_tokens = 8, .ignore_eos = true}, {});
  CHECK(again.generation.stats.reused_tokens == static_cast<int>(prompt.size()) - 1);
}

TEST_CASE("speculative: greedy stops at end-of-generation and token limits like plain decoding") {
  SpecModels& m = spec_models();
  ThreadPool pool(2);
  const std::vector<int32_t> prompt = prompt_tokens("The");
  for (int n : {1, 2, 7, 200}) {
    CAPTURE(n);
    Context plain_ctx(*m.target, spec_ctx(), pool);
    SamplerChain plain_sampler(greedy(), plain_ctx.n_ctx());
    Session session(plain_ctx, *m.tok, plain_sampler);
    const GenerationResult want = session.generate(prompt, {.max_tokens = n}, {});

    Context target(*m.target, spec_ctx(), pool), draft(*m.q8, spec_ctx(), pool);
    SamplerChain sampler(greedy(), target.n_ctx());
    DraftModel source(draft, sampler);
    source.set_eog({m.tok->eos()});
    SpeculativeDecoder spec(target, *m.tok, sampler, source, {.min = 1, .max = 5, .adaptive = false});
    const SpeculativeResult got = spec.generate(prompt, {.max_tokens = n}, {});
    CHECK(got.generation.tokens == want.tokens);
    CHECK(got.generation.stats.stop == want.stats.stop);
    CHECK(spec.cached_tokens() == session.cached_tokens());
  }
}

TEST_CASE("speculative: context-full stop matches plain decoding") {
  SpecModels& m = spec_models();
  ThreadPool pool(1);
  const std::vector<int32_t> prompt = prompt_tokens("The");
  Context plain_ctx(*m.target, spec_ctx(32), pool);
  SamplerChain plain_sampler(greedy(), plain_ctx.n_ctx());
  Session session(plain_ctx, *m.tok, plain_sampler);
  const GenerationResult want = session.generate(prompt, {.ignore_eos = true}, {});
  REQUIRE(want.stats.stop == StopReason::ContextFull);

  Context target(*m.target, spec_ctx(32), pool), draft(*m.target, spec_ctx(32), pool);
  SamplerChain sampler(greedy(), target.n_ctx());
  DraftModel source(draft, sampler);
  SpeculativeDecoder spec(target, *m.tok, sampler, source, {.min = 1, .max = 6, .adaptive = false});
  const SpeculativeResult got = spec.generate(prompt, {.ignore_eos = true}, {});
  CHECK(got.generation.stats.stop == StopReason::ContextFull);
  CHECK(got.generation.tokens == want.tokens);
  CHECK(spec.cached_tokens() == session.cached_tokens());
}

TEST_CASE("vocab compatibility: shared ids must agree, trailing extras are fine") {
  Vocab base;
  for (const char* t : {"<unk>", "<s>", "</s>", "a", "b", "c", "d"}) base.tokens.push_back({t, 0.0f, TokenType::Normal});
  Vocab padded = base;
  padded.tokens.push_back({"[PAD0]", 0.0f, TokenType::Unused});
  padded.tokens.push_back({"<|added|>", 0.0f, TokenType::UserDefined});
  CHECK_FALSE(first_vocab_mismatch(base, base));
  CHECK_FALSE(first_vocab_mismatch(base, padded));
  CHECK_FALSE(first_vocab_mismatch(padded, base));
  CHECK_NOTHROW(require_compatible_vocab(padded, base));

  Vocab changed = padded;
  changed.tokens[5].text = "C";
  const auto mm = first_vocab_mismatch(base, changed);
  REQUIRE(mm);
  CHECK(mm->id == 5);
  CHECK(mm->target_text == "c");
  CHECK(mm->draft_text == "C");
  try {
    require_compatible_vocab(base, changed);
    FAIL("incompatible vocabularies were accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    CHECK(std::string(e.what()).find("token id 5") != std::string::npos);
  }

  // Real vocabularies: aidreams' 512 tokens against Llama 2's 32000.
  const gguf::File llama = gguf::File::open(shared_path("vocab/ggml-vocab-llama-spm.gguf"));
  const Vocab llama_vocab = Vocab::from_gguf(llama);
  const auto real = first_vocab_mismatch(spec_models().tok->vocab(), llama_vocab);
  REQUIRE(real);
  MESSAGE("aidreams vs llama-spm: first differing id " << real->id << " ('" << real->target_text << "' vs '"
                                                        << real->draft_text << "')");
  CHECK_THROWS_AS(require_compatible_vocab(spec_models().tok->vocab(), llama_vocab), Error);
  // A model and its quantization share the vocabulary exactly.
  CHECK_FALSE(first_vocab_mismatch(spec_models().tok->vocab(), Vocab::from_gguf(spec_models().q8->gguf())));
}

TEST_CASE("n-gram drafting proposes what followed the latest earlier occurrence") {
  NgramDraft ngram(3);
  DraftProposal p;
  const std::vector<int32_t> ctx = {5, 1, 2, 3, 9, 9, 1, 2, 3, 4, 7, 1, 2, 3};
  ngram.propose(ctx, 3, 100, p);
  CHECK(p.tokens == std::vector<int32_t>{4, 7, 1});  // "1 2 3" last seen before "4 7 1 2 3"
  CHECK(p.deterministic());
  ngram.propose(ctx, 10, 100, p);
  CHECK(p.tokens == std::vector<int32_t>{4, 7, 1, 2, 3});  // runs to the end of the context
  ngram.propose(ctx, 3, 5, p);
  CHECK(p.tokens == std::vector<int32_t>{4});  // ids >= 5 are not the target's: cut before 7
  ngram.propose(std::vector<int32_t>{1, 2, 3, 8}, 4, 100, p);
  CHECK(p.tokens.empty());  // 8 never occurred before
  ngram.propose(std::vector<int32_t>{1, 2, 3, 8, 2}, 4, 100, p);
  CHECK(p.tokens == std::vector<int32_t>{3, 8, 2});  // falls back to a 1-gram
  CHECK_THROWS_AS(NgramDraft(0), Error);
}

TEST_CASE("draft length: long drafts when they pay, off (with sparse probes) when they do not") {
  SUBCASE("good, cheap drafts") {
    DraftLength len({.min = 1, .max = 8});
    CHECK(len.next() == 0);  // the first steps measure plain passes (the very first is a warm-up)
    len.record_pass(1, 50.0);
    CHECK(len.next() == 0);
    len.record_pass(1, 10.0);
    for (int i = 0; i < 30; ++i) {
      const int k = len.next();
      if (k == 0) {  // the periodic plain step
        len.record_pass(1, 10.0);
        continue;
      }
      len.record_draft(k, 0.5 * k);
      len.record_pass(k + 1, 10.0 + 1.0 * k);
      len.record_verdict(k, k);  // all accepted
    }
    const int k = len.next();
    CHECK((k == 8 || k == 0));
    CHECK(len.rate(8) > 3 * len.rate(0));
    CHECK(len.acceptance() > 0.9);
  }
  SUBCASE("poor drafts: drafting switches off, probes stay rare") {
    DraftLength len({.min = 1, .max = 8});
    len.record_pass(1, 10.0);
    len.record_pass(1, 10.0);
    int drafted_rounds = 0;
    for (int i = 0; i < 600; ++i) {
      const int k = len.next();
      if (k == 0) {
        len.record_pass(1, 10.0);
        continue;
      }
      ++drafted_rounds;
      len.record_draft(k, 3.0 * k);
      len.record_pass(k + 1, 10.0 + 2.0 * k);
      len.record_verdict(k, 0);
    }
    CHECK(len.off());
    MESSAGE("rounds with a draft: " << drafted_rounds << " of 600");
    CHECK(drafted_rounds <= 12);
    CHECK(len.rate(1) < len.rate(0));
  }
  SUBCASE("pass costs are measured per size: 2-3 token passes may cost more than 4") {
    DraftLength len({.min = 1, .max = 6, .costly_source = false});
    len.record_pass(1, 10.0);  // warm-up
    const double cost[] = {0, 10, 19, 28, 13, 14, 15, 16};  // CPU matmul shares weights from 4 rows on
    for (int n = 1; n <= 7; ++n) len.record_pass(n, cost[n]);
    len.record_draft(1, 0.0);
    for (int i = 0; i < 20; ++i) len.record_verdict(4, 3);
    CHECK(len.rate(1) < len.rate(0));  // one draft + 2-row pass: slower than plain
    CHECK(len.rate(3) > len.rate(0));
    const int k = len.next();
    CHECK(k >= 3);
  }
  SUBCASE("a draft model as slow as the target is never probed again, however right it is") {
    DraftLength len({.min = 1, .max = 4});
    len.record_pass(1, 10.0);
    len.record_pass(1, 10.0);
    int drafted_rounds = 0;
    for (int i = 0; i < 2000; ++i) {
      const int k = len.next();
      if (k == 0) {
        len.record_pass(1, 10.0);
        continue;
      }
      ++drafted_rounds;
      len.record_draft(k, 10.0 * k);  // one target step per drafted token
      len.record_pass(k + 1, 10.0 + 1.0 * k);
      len.record_verdict(k, k);  // always accepted
    }
    CHECK_FALSE(len.could_pay());
    CHECK(len.off());
    MESSAGE("rounds with a draft: " << drafted_rounds << " of 2000");
    CHECK(drafted_rounds <= 4);  // the first rounds on the priors only
  }
  SUBCASE("a preempted pass counts at most as many plain steps as it has tokens") {
    DraftLength len({.min = 1, .max = 4, .costly_source = false});
    len.record_pass(1, 10.0);  // warm-up
    len.record_pass(1, 10.0);
    len.record_pass(2, 500.0);  // a scheduler hiccup: 50 plain steps' time for 2 tokens
    CHECK(len.rate(1) == doctest::Approx((1.0 + len.acceptance()) / (20.0 + 0.1 * 10.0)));
  }
  SUBCASE("fixed length when not adaptive") {
    DraftLength len({.min = 2, .max = 5, .adaptive = false});
    CHECK(len.next() == 5);
  }
  CHECK_THROWS_AS(DraftLength({.min = 0, .max = 4}), Error);
  CHECK_THROWS_AS(DraftLength({.min = 5, .max = 4}), Error);
}
