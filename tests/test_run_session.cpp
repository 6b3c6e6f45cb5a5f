// The generation session on the real aidreams260K model: KV-prefix reuse gives the same
// tokens as a fresh prefill, rollback to a shared prefix, the context-full stop and the
// context shift.
#include <doctest/doctest.h>

#include "util/thread_pool.h"
#include "cli_test_util.h"
#include "engine/session.h"
#include "model/model.h"
#include "sampling/sampler_chain.h"
#include "tokenizer/tokenizer.h"

using namespace ember;

namespace {

struct Fixture {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tok;
  ThreadPool pool{1};
  SamplingParams greedy;

  Fixture() {
    LoadOptions quiet;
    quiet.print_plan = false;
    model = Model::load(test::aidreams_gguf(), quiet);
    tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(model->gguf()));
    greedy.temperature = 0.0f;
    greedy.seed = 1;
  }

  std::unique_ptr<Context> context(int n_ctx, ContextPolicy policy = ContextPolicy::Error) {
    ContextOptions o;
    o.n_ctx = n_ctx;
    o.policy = policy;
    o.print_plan = false;
    return std::make_unique<Context>(*model, o, pool);
  }

  // Greedy continuation of `prompt` from an empty cache.
  std::vector<int32_t> fresh(const std::vector<int32_t>& prompt, int n) {
    auto ctx = context(128);
    SamplerChain sampler(greedy);
    Session s(*ctx, *tok, sampler);
    return s.generate(prompt, {.max_tokens = n}, nullptr).tokens;
  }
};

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("a second request reuses the cached prefix and matches a fresh prefill") {
  Fixture f;
  auto ctx = f.context(128);
  SamplerChain sampler(f.greedy);
  Session session(*ctx, *f.tok, sampler);
  const std::vector<int32_t> prompt = f.tok->encode("The", true, false);
  const GenerationResult first = session.generate(prompt, {.max_tokens = 10}, nullptr);
  REQUIRE(first.tokens.size() == 10);
  CHECK(first.stats.reused_tokens == 0);
  // The last generated token is sampled but not yet decoded.
  CHECK(session.cached_tokens().size() == prompt.size() + 9);

  const std::vector<int32_t> next = concat(concat(prompt, first.tokens), f.tok->encode(" and the moon", false, false));
  const GenerationResult second = session.generate(next, {.max_tokens = 8}, nullptr);
  CHECK(second.stats.reused_tokens == static_cast<int>(prompt.size() + 9));
  CHECK(second.stats.decoded_prompt_tokens() == static_cast<int>(next.size() - prompt.size() - 9));
  CHECK(second.tokens == f.fresh(next, 8));

  // A prompt that shares only "The" rolls the cache back to it.
  const std::vector<int32_t> other = concat(prompt, f.tok->encode(" sky was", false, false));
  const GenerationResult third = session.generate(other, {.max_tokens = 8}, nullptr);
  CHECK(third.stats.reused_tokens == static_cast<int>(prompt.size()));
  CHECK(third.tokens == f.fresh(other, 8));

  // -n 0 only evaluates the prompt.
  const GenerationResult none = session.generate(other, {.max_tokens = 0}, nullptr);
  CHECK(none.tokens.empty());
  CHECK(none.stats.stop == StopReason::TokenLimit);

  // The very same prompt again: everything but its last token is reused.
  const GenerationResult again = session.generate(other, {.max_tokens = 8}, nullptr);
  CHECK(again.stats.reused_tokens == static_cast<int>(other.size() - 1));
  CHECK(again.tokens == third.tokens);
}

TEST_CASE("streamed text equals the decoded tokens") {
  Fixture f;
  auto ctx = f.context(128);
  SamplingParams p;
  p.seed = 99;
  SamplerChain sampler(p);
  Session session(*ctx, *f.tok, sampler);
  std::string streamed;
  const GenerationResult r = session.generate(f.tok->encode("The", true, false), {.max_tokens = 30},
                                              [&](std::string_view piece) { streamed += piece; });
  CHECK(streamed == r.text);
  std::string pieces;  // LeadingSpace::Keep: exactly the tokens' bytes
  for (int32_t t : r.tokens) pieces += f.tok->piece(t);
  CHECK(streamed == pieces);
  CHECK(r.tokens.size() == 30);
}

TEST_CASE("a full context stops generation under the default policy") {
  Fixture f;
  auto ctx = f.context(16);
  SamplerChain sampler(f.greedy);
  Session session(*ctx, *f.tok, sampler);
  const std::vector<int32_t> prompt = f.tok->encode("The", true, false);
  const GenerationResult r = session.generate(prompt, {.max_tokens = -1, .ignore_eos = true}, nullptr);
  CHECK(r.stats.stop == StopReason::ContextFull);
  CHECK(r.stats.context_used == 16);
  CHECK(r.tokens.size() == 16 - prompt.size() + 1);  // the last one is sampled, never decoded
}

TEST_CASE("the shift policy drops old tokens and keeps generating") {
  Fixture f;
  auto ctx = f.context(16, ContextPolicy::Shift);
  SamplerChain sampler(f.greedy);
  Session session(*ctx, *f.tok, sampler);
  const GenerationResult r = session.generate(f.tok->encode("The", true, false), {.max_tokens = 40, .ignore_eos = true}, nullptr);
  CHECK(r.stats.stop == StopReason::TokenLimit);
  CHECK(r.tokens.size() == 40);
  CHECK(r.stats.shifted_tokens > 0);
  CHECK(r.stats.context_used <= 16);
  CHECK(session.cached_tokens().size() == static_cast<size_t>(ctx->kv_n_tokens(0)));
}
