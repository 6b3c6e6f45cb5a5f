// Continuous batching: N concurrent requests give exactly what each gives alone (greedy and
// seeded, with chunked prefill, prefix-cache hits and preemption), a sequence's logits are
// bitwise those it has alone, cancellation frees blocks, a request too big for the pool is
// refused without disturbing the others, and a randomized run keeps the pool consistent.
// The same with speculative n-gram drafting per sequence: greedy tokens and log-probabilities
// exactly those without drafting (with drafts accepted), stop tokens inside an accepted run,
// seeded runs reproducible, and the randomized run's invariants.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>

#include "engine/scheduler.h"
#include "kv/kv_cache.h"
#include "models/model_support.h"
#include "models/scheduler_support.h"
#include "util/error.h"

using namespace ember;
using namespace ember::test;

namespace {

struct Outcome {
  std::map<int, std::vector<int32_t>> tokens;
  std::map<int, FinishReason> reasons;
  std::map<int, std::vector<TokenLogprobs>> logprobs;
  SchedulerStats stats;
};

// Every request with `draft` (default: no drafting).
Outcome run_all(const Model& model, std::vector<SequenceRequest> reqs, int n_par, int batch_tokens, int kv_blocks,
                const SequenceDrafting& draft = {}, int threads = 2) {
  ThreadPool pool(threads);
  Context ctx(model, options(n_par, kv_blocks), pool);
  Outcome out;
  Scheduler sched(ctx, SchedulerOptions{n_par, batch_tokens},
                  Scheduler::Events{[&](int id, int32_t t) { out.tokens[id].push_back(t); },
                                    [&](int id, const SequenceEnd& e) { out.reasons[id] = e.reason; },
                                    [&](int id, const TokenLogprobs& lp) { out.logprobs[id].push_back(lp); }});
  for (SequenceRequest& r : reqs) {
    r.draft = draft;
    sched.submit(r);
  }
  while (sched.step()) REQUIRE(ctx.kv_cache().audit() == "");
  out.stats = sched.stats();
  for (const KVBlockStats& g : ctx.kv_cache().stats()) CHECK(g.used == 0);  // every block back
  return out;
}

void check_concurrent_equals_alone(const std::string& arch) {
  CAPTURE(arch);
  auto model = Model::load(tiny_model(arch), quiet_load());
  const std::vector<int32_t> system = prompt_of(70, 99);  // a shared start: prefix hits
  std::vector<SequenceRequest> reqs;
  for (int i = 0; i < 8; ++i) {
    const bool shared = i % 2 == 0;
    reqs.push_back(request(prompt_of(5 + 9 * i, i, shared ? system : std::vector<int32_t>{}), 12 + 3 * (i % 4),
                           i % 3 == 0 ? 0.0f : 1.0f, 1000 + i));
  }
  std::vector<std::vector<int32_t>> want;
  for (const SequenceRequest& r : reqs) want.push_back(alone(*model, r));
  struct Setup {
    int n_par, batch_tokens, kv_blocks;
  };
  // everything at once; chunked prefill in a small budget; a pool so small it preempts
  for (Setup s : {Setup{8, 512, 0}, Setup{4, 24, 0}, Setup{8, 64, 12}}) {
    CAPTURE(s.n_par);
    CAPTURE(s.batch_tokens);
    CAPTURE(s.kv_blocks);
    const Outcome got = run_all(*model, reqs, s.n_par, s.batch_tokens, s.kv_blocks);
    for (size_t i = 0; i < reqs.size(); ++i) {
      CAPTURE(i);
      CHECK(got.tokens.at(static_cast<int>(i)) == want[i]);
      CHECK(got.reasons.at(static_cast<int>(i)) == FinishReason::Length);
    }
    if (s.kv_blocks) CHECK(got.stats.preemptions > 0);
    // Prefix caching is global-only; requests admitted in one step find nothing published yet.
    if (arch != "gemma3" && s.n_par < 8) CHECK(got.stats.cached_tokens > 0);
  }
}

}  // namespace

TEST_CASE("concurrent requests give exactly what each gives alone (llama)") { check_concurrent_equals_alone("llama"); }
TEST_CASE("concurrent requests give exactly what each gives alone (gemma3, sliding window)") {
  check_concurrent_equals_alone("gemma3");
}

TEST_CASE("a sequence's logits are bitwise the same alone and batched with others in other chunks") {
  auto model = Model::load(tiny_model("qwen3"), quiet_load());
  const std::vector<int32_t> a = prompt_of(150, 1), other = prompt_of(90, 2);
  ThreadPool pool(2);
  Context solo(*model, options(3), pool), mixed(*model, options(3), pool);
  const std::vector<float> want = run_batch(solo, a, 0, a.size());  // one call, ubatches of 512
  // The same tokens in chunks of 7, interleaved with two other sequences' tokens.
  std::vector<float> got;
  for (size_t begin = 0; begin < a.size(); begin += 7) {
    Batch b;
    for (size_t i = 0; i < 5 && begin / 7 * 5 + i < other.size(); ++i) b.add(other[begin / 7 * 5 + i], -1, 0, true);
    for (size_t i = begin; i < std::min(a.size(), begin + 7); ++i) b.add(a[i], -1, 1, true);
    if (begin < 40) b.add(other[begin], -1, 2, false);
    const std::span<const float> l = mixed.decode(b);
    const size_t n_other = static_cast<size_t>(b.n_outputs()) - std::min<size_t>(7, a.size() - begin);
    got.insert(got.end(), l.begin() + n_other * mixed.n_vocab(), l.end());
  }
  REQUIRE(got.size() == want.size());
  CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
}

TEST_CASE("cancelling frees the sequence's blocks at the next step; a request too big for the pool is refused") {
  auto model = Model::load(tiny_model("llama"), quiet_load());
  ThreadPool pool(1);
  Context ctx(*model, options(2, 6), pool);
  std::map<int, FinishReason> reasons;
  Scheduler sched(ctx, SchedulerOptions{}, Scheduler::Events{nullptr, [&](int id, const SequenceEnd& e) { reasons[id] = e.reason; }});
  const int a = sched.submit(request(prompt_of(40, 1), 100, 0.0f, 1));
  for (int i = 0; i < 3; ++i) sched.step();
  CHECK(ctx.kv_cache().stats().front().used == 2);
  try {
    sched.submit(request(prompt_of(200, 2), 10, 0.0f, 1));
    FAIL("a request of 210 tokens fits a pool of 6 x 32");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::OutOfMemory);
    CHECK(std::string(e.what()).find("needs 7 KV blocks") != std::string::npos);
  }
  CHECK_THROWS_AS(sched.submit(request({}, 10, 0.0f, 1)), Error);
  CHECK_THROWS_AS(sched.submit(request(prompt_of(250, 3), 10, 0.0f, 1)), Error);  // over n_ctx
  CHECK(sched.n_running() == 1);
  sched.cancel(a);
  sched.step();
  CHECK(reasons.at(a) == FinishReason::Cancelled);
  CHECK(ctx.kv_cache().stats().front().used == 0);
  CHECK(sched.idle());
}

namespace {

// Arrivals, cancellations and preemptions at random; drafting > 0: every other request
// drafts with n-grams up to that size, gated or fixed.
SchedulerStats randomized_run(int drafting) {
  auto model = Model::load(tiny_model("llama"), quiet_load());
  ThreadPool pool(1);
  Context ctx(*model, options(6, 14), pool);
  RandomTraffic traffic;
  Scheduler sched(ctx, SchedulerOptions{6, 40}, traffic.events());
  auto draft = [&](SequenceRequest& r, int i, std::mt19937& rng) {
    if (drafting > 0 && i % 2 == 0) r.draft = SequenceDrafting{drafting, 1 + static_cast<int>(rng() % 8), rng() % 2 == 0};
  };
  traffic.run(sched, 1500, draft, [&](int step) {
    CAPTURE(step);
    REQUIRE(ctx.kv_cache().audit() == "");
  });
  CHECK(traffic.each_finished_once());
  CHECK(sched.stats().preemptions > 0);
  CHECK(sched.stats().cached_tokens > 0);
  CHECK(ctx.kv_cache().stats().front().used == 0);
  return sched.stats();
}

}  // namespace

TEST_CASE("randomized arrivals, cancellations and preemptions keep the pool consistent") { randomized_run(0); }

TEST_CASE("drafting: randomized arrivals, cancellations and preemptions keep the pool consistent") {
  const SchedulerStats st = randomized_run(3);
  CHECK(st.accepted_tokens > 0);
  CHECK(st.drafted_tokens > st.accepted_tokens);  // rejections (and their rollbacks) happened too
}

// The drafting tests below run on one thread: they are many small steps, which a pool of
// spinning workers makes slow on a loaded machine (the kernels' bits do not depend on it).
namespace {

// Prompts that repeat themselves (period 50 and 17), so n-gram lookups find something.
std::vector<SequenceRequest> repetitive_requests(float temperature) {
  std::vector<SequenceRequest> reqs;
  for (int i = 0; i < 6; ++i) {
    std::vector<int32_t> p = prompt_of(60 + 11 * i, i);
    for (int r = 0; r < 3; ++r)
      for (int j = 0; j < 17; ++j) p.push_back((j * 5 + i) % 40 + 2);
    SequenceRequest q = request(std::move(p), 30 + 4 * i, temperature, 500 + i);
    q.top_logprobs = 2;
    reqs.push_back(std::move(q));
  }
  return reqs;
}

// Tokens, finish reasons and log-probabilities of `drafted` bitwise those of `plain`, which
// equal `want` (each request alone).
void check_same_output(const Outcome& plain, const Outcome& drafted, const std::vector<std::vector<int32_t>>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    const int id = static_cast<int>(i);
    CHECK(plain.tokens.at(id) == want[i]);
    CHECK(drafted.tokens.at(id) == want[i]);
    CHECK(drafted.reasons.at(id) == FinishReason::Length);
    const std::vector<TokenLogprobs>& a = plain.logprobs.at(id);
    const std::vector<TokenLogprobs>& b = drafted.logprobs.at(id);
    REQUIRE(a.size() == b.size());
    for (size_t t = 0; t < a.size(); ++t) {
      CHECK(a[t].token == b[t].token);
      CHECK(std::memcmp(&a[t].logprob, &b[t].logprob, sizeof(float)) == 0);
      CHECK(a[t].top == b[t].top);
    }
  }
}

void check_drafting_equals_plain(const std::string& arch) {
  CAPTURE(arch);
  auto model = Model::load(tiny_model(arch), quiet_load());
  const std::vector<SequenceRequest> reqs = repetitive_requests(0.0f);
  std::vector<std::vector<int32_t>> want;
  for (const SequenceRequest& r : reqs) want.push_back(alone(*model, r, 1));
  struct Setup {
    int n_par, batch_tokens, kv_blocks;
  };
  // all at once; a budget that cuts drafts; a pool so small it preempts and cuts drafts
  for (Setup s : {Setup{6, 512, 0}, Setup{3, 20, 0}, Setup{6, 64, 14}}) {
    CAPTURE(s.n_par);
    CAPTURE(s.batch_tokens);
    CAPTURE(s.kv_blocks);
    const Outcome plain = run_all(*model, reqs, s.n_par, s.batch_tokens, s.kv_blocks, {}, 1);
    for (bool fixed : {false, true}) {  // gated by acceptance, and always drafting max
      CAPTURE(fixed);
      const Outcome drafted =
          run_all(*model, reqs, s.n_par, s.batch_tokens, s.kv_blocks, SequenceDrafting{3, 8, fixed}, 1);
      check_same_output(plain, drafted, want);
      CHECK(drafted.stats.accepted_tokens > 0);  // drafting did something
      CHECK(drafted.stats.steps < plain.stats.steps);
      CHECK(drafted.stats.generated_tokens == plain.stats.generated_tokens);
      if (s.kv_blocks) CHECK(drafted.stats.preemptions > 0);
    }
  }
}

}  // namespace

TEST_CASE("drafting: greedy sequences give exactly their tokens and logprobs without drafting (llama)") {
  check_drafting_equals_plain("llama");
}
TEST_CASE("drafting: greedy sequences give exactly their tokens without drafting (gemma3, sliding window)") {
  check_drafting_equals_plain("gemma3");
}

TEST_CASE("drafting: a stop token or max_tokens inside an accepted run ends the sequence where plain decoding does") {
  auto model = Model::load(tiny_model("llama"), quiet_load());
  std::vector<SequenceRequest> reqs = repetitive_requests(0.0f);
  const std::vector<int32_t> full = alone(*model, reqs[0], 1);
  // A stop token from late in the output (where drafts are accepted): the text ends before it.
  const int32_t stop = full[full.size() * 3 / 4];
  const size_t cut = static_cast<size_t>(std::find(full.begin(), full.end(), stop) - full.begin());
  reqs.resize(2);
  reqs[0].stop_tokens = {stop};
  reqs[1].max_tokens = 17;  // an odd length, likely inside a run
  const std::vector<int32_t> short_one = alone(*model, reqs[1], 1);
  for (int n_par : {1, 2}) {
    CAPTURE(n_par);
    const Outcome got = run_all(*model, reqs, n_par, 512, 0, SequenceDrafting{3, 8, true}, 1);
    CHECK(got.tokens.at(0) == std::vector<int32_t>(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut)));
    CHECK(got.reasons.at(0) == FinishReason::Stop);
    CHECK(got.tokens.at(1) == short_one);
    CHECK(got.reasons.at(1) == FinishReason::Length);
    CHECK(got.stats.accepted_tokens > 0);
  }
}

TEST_CASE("drafting: seeded sampled sequences are reproducible") {
  auto model = Model::load(tiny_model("llama"), quiet_load());
  const std::vector<SequenceRequest> reqs = repetitive_requests(0.7f);
  const Outcome a = run_all(*model, reqs, 6, 512, 0, SequenceDrafting{3}, 1),
                b = run_all(*model, reqs, 6, 512, 0, SequenceDrafting{3}, 1);
  CHECK(a.tokens == b.tokens);
  CHECK(a.stats.drafted_tokens > 0);
  CHECK(a.stats.accepted_tokens == b.stats.accepted_tokens);
  for (size_t i = 0; i < reqs.size(); ++i)
    CHECK(a.tokens.at(static_cast<int>(i)).size() == static_cast<size_t>(reqs[i].max_tokens));
}

TEST_CASE("drafting: a cancel from an event stops the accepted run at once; bad drafting settings are refused") {
  auto model = Model::load(tiny_model("llama"), quiet_load());
  std::vector<SequenceRequest> reqs = repetitive_requests(0.0f);
  const std::vector<int32_t> full = alone(*model, reqs[0], 1);
  ThreadPool pool(1);
  Context ctx(*model, options(1), pool);
  std::vector<int32_t> got;
  FinishReason reason = FinishReason::Length;
  const size_t cancel_at = 20;
  Scheduler* self = nullptr;
  Scheduler sched(ctx, SchedulerOptions{},
                  Scheduler::Events{[&](int id, int32_t t) {
                                      got.push_back(t);
                                      if (got.size() == cancel_at) self->cancel(id);  // as a stop string does
                                    },
                                    [&](int, const SequenceEnd& e) { reason = e.reason; }});
  self = &sched;
  reqs[0].draft.ngram = 3;
  sched.submit(reqs[0]);
  while (sched.step()) REQUIRE(ctx.kv_cache().audit() == "");
  CHECK(got == std::vector<int32_t>(full.begin(), full.begin() + cancel_at));
  CHECK(reason == FinishReason::Cancelled);
  CHECK(sched.stats().accepted_tokens > 0);
  CHECK(ctx.kv_cache().stats().front().used == 0);
  SequenceRequest bad = reqs[1];
  bad.draft = SequenceDrafting{3, 0};
  CHECK_THROWS_AS(sched.submit(bad), Error);
  bad.draft = SequenceDrafting{-1, 4};
  CHECK_THROWS_AS(sched.submit(bad), Error);
}
