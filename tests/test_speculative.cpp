// Speculative decoding through the one generation loop (a Session's scheduler): greedy output
// identical to plain decoding with drafts that agree often and rarely (and n-gram drafts),
// batch-vs-single logits bit for bit (what the greedy identity rests on), the caches after a
// speculative run equal a plain run's, seeded output the same on every run, vocabulary
// compatibility and n-gram proposals.
#include <doctest/doctest.h>

#include <cstring>

#include "engine/draft/ngram_draft.h"
#include "engine/draft/speculative.h"
#include "engine/session.h"
#include "engine/draft/vocab_compat.h"
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

SamplingParams sampled(float temperature, int top_k, uint64_t seed) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.seed = seed;
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

// A target context, a draft model's beside it (or none: n-gram drafting) and a session over
// both, as `ember run --draft` builds them.
struct SpecSession {
  Context target;
  std::unique_ptr<Context> draft;
  SamplerChain sampler;
  Session session;
  SpecSession(const Model& t, const Model* d, const SamplingParams& p, ThreadPool& pool, int n_ctx = 256)
      : target(t, spec_ctx(n_ctx), pool),
        draft(d ? std::make_unique<Context>(*d, spec_ctx(n_ctx), pool) : nullptr),
        sampler(p, target.n_ctx()),
        session(target, *spec_models().tok, sampler, draft.get()) {}
};

SequenceDrafting drafting(bool model, int max, bool fixed, int min = 1) {
  return SequenceDrafting{.ngram = model ? 0 : 3, .max = max, .fixed = fixed, .model = model, .min = min};
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
  // Long enough for a verify pass at the cap: for gqa's groups of 4 that is two of
  // attention's query tiles.
  const std::vector<int32_t> prompt = prompt_tokens(
      "The little cat sat on the warm mat and looked at the stars. Then the dog came in from the rain, "
      "shook its coat by the fire, and lay down beside the cat until the morning came.");
  REQUIRE(prompt.size() >= 5 + static_cast<size_t>(kMaxVerifyRows));
  for (const Model* model : {m.target.get(), m.q8.get(), m.gqa.get()}) {
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      Context batched(*model, spec_ctx(), pool), single(*model, spec_ctx(), pool);
      CAPTURE(threads);
      const size_t n_vocab = static_cast<size_t>(batched.n_vocab());
      const std::span<const int32_t> head(prompt.data(), 5);
      decode_rows(batched, head);
      decode_rows(single, head);
      const size_t n = static_cast<size_t>(kMaxVerifyRows);
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
      {"n-gram, adaptive (guesses while the gate is shut)", m.target.get(), nullptr, 1.0f, true, 0.0, 1.0},
      {"n-gram, synth target", m.noise.get(), nullptr, 1.0f, false, 0.0, 1.0},
  };
  for (const Case& c : cases) {
    const std::string name = c.name;
    CAPTURE(name);
    const int n = 96;
    const GenerationResult want = plain_run(*c.target, prompt, greedy(c.repeat_penalty), n, pool);
    REQUIRE(want.tokens.size() == static_cast<size_t>(n));

    SpecSession spec(*c.target, c.draft, greedy(c.repeat_penalty), pool);
    const GenerationResult got = spec.session.generate(
        prompt, {.max_tokens = n, .ignore_eos = true, .draft = drafting(c.draft != nullptr, 6, !c.adaptive)}, {});
    CHECK(got.tokens == want.tokens);
    CHECK(got.text == want.text);
    MESSAGE(c.name << ": drafted " << got.draft.drafted << ", accepted " << got.draft.accepted << ", passes "
                   << got.draft.target_passes << " for " << n << " tokens");
    if (!c.adaptive && c.draft) CHECK(got.draft.drafted > 0);
    CHECK(got.draft.acceptance_rate() >= c.min_acceptance);
    CHECK(got.draft.acceptance_rate() <= c.max_acceptance);
    CHECK(got.draft.target_passes <= n);
    // The cache holds what plain decoding's holds: prompt + every generated token but the last.
    std::vector<int32_t> held = prompt;
    held.insert(held.end(), want.tokens.begin(), want.tokens.end() - 1);
    const std::span<const int32_t> cached = spec.session.cached_tokens();
    CHECK(std::vector<int32_t>(cached.begin(), cached.end()) == held);
    CHECK(spec.target.kv_n_tokens(0) == static_cast<int>(held.size()));
  }
}

TEST_CASE("speculative: the target cache after rejections equals a plain run's, bit for bit") {
  SpecModels& m = spec_models();
  ThreadPool pool(1);
  const std::vector<int32_t> prompt = prompt_tokens("Once upon a time");
  SpecSession spec(*m.target, m.noise.get(), sampled(1.0f, 20, 5), pool);
  const GenerationResult r =
      spec.session.generate(prompt, {.max_tokens = 40, .ignore_eos = true, .draft = drafting(true, 4, true, 4)}, {});
  REQUIRE(r.draft.drafted > r.draft.accepted);  // rejections (and rollbacks) happened
  const std::span<const int32_t> held = spec.session.cached_tokens();
  REQUIRE(spec.target.kv_n_tokens(0) == static_cast<int>(held.size()));

  // A fresh context decoding the same tokens one by one, then one probe token in both.
  Context plain(*m.target, spec_ctx(), pool);
  for (int32_t t : held) decode_rows(plain, std::span(&t, 1));
  const int32_t probe = r.tokens.back();
  CHECK(bit_equal(decode_rows(spec.target, std::span(&probe, 1)), decode_rows(plain, std::span(&probe, 1))));
  spec.target.kv_rollback(0, 1);

  // A second request reuses the common prefix and continues as a fresh run would.
  const GenerationResult again =
      spec.session.generate(prompt, {.max_tokens = 8, .ignore_eos = true, .draft = drafting(true, 4, true, 4)}, {});
  CHECK(again.stats.reused_tokens == static_cast<int>(prompt.size()) - 1);
}

TEST_CASE("speculative: seeded output is the same on every run") {
  SpecModels& m = spec_models();
  ThreadPool pool(2);
  const std::vector<int32_t> prompt = prompt_tokens("Once upon a time");
  const SamplingParams params = sampled(0.7f, 40, 7);
  for (const Model* draft : std::vector<const Model*>{m.q4.get(), nullptr}) {
    CAPTURE(draft != nullptr);
    std::vector<std::vector<int32_t>> runs;
    for (int i = 0; i < 3; ++i) {
      SpecSession spec(*m.target, draft, params, pool);
      runs.push_back(spec.session.generate(prompt, {.max_tokens = 40, .draft = drafting(draft != nullptr, 8, false)}, {})
                         .tokens);
    }
    CHECK(runs[1] == runs[0]);
    CHECK(runs[2] == runs[0]);
  }
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

    SpecSession spec(*m.target, m.q8.get(), greedy(), pool);
    const GenerationResult got = spec.session.generate(prompt, {.max_tokens = n, .draft = drafting(true, 5, true)}, {});
    CHECK(got.tokens == want.tokens);
    CHECK(got.stats.stop == want.stats.stop);
    CHECK(std::ranges::equal(spec.session.cached_tokens(), session.cached_tokens()));
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

  SpecSession spec(*m.target, m.target.get(), greedy(), pool, 32);
  const GenerationResult got = spec.session.generate(prompt, {.ignore_eos = true, .draft = drafting(true, 6, true)}, {});
  CHECK(got.stats.stop == StopReason::ContextFull);
  CHECK(got.tokens == want.tokens);
  CHECK(std::ranges::equal(spec.session.cached_tokens(), session.cached_tokens()));
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
