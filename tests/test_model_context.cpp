// Context behaviour on the tiny models: batch == one-by-one, rollback, KV types,
// reproducibility, context-full policies, memory plan refusal, multiple sequences.
#include <doctest/doctest.h>

#include <cstring>

#include "model/arch.h"
#include "models/model_support.h"
#include "util/error.h"

using namespace ember;
using namespace ember::test;

namespace {

ContextOptions opts(int n_ctx = 256, int n_ubatch = 64) {
  ContextOptions o;
  o.n_ctx = n_ctx;
  o.n_ubatch = n_ubatch;
  o.print_plan = false;
  return o;
}

bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("prefill in one batch agrees with token-by-token decode") {
  for (const char* arch : {"llama", "gemma3"}) {
    const Golden g = load_golden(arch);
    auto model = Model::load(tiny_model(arch), quiet_load());
    ThreadPool pool(1);
    Context a(*model, opts(), pool), b(*model, opts(), pool);
    const size_t n = 96;
    const std::vector<float> batched = run_batch(a, g.tokens, 0, n);
    const std::vector<float> single = run_one_by_one(b, g.tokens, 0, n);
    const Agreement r = compare(batched, single.data(), n, g.n_vocab);
    MESSAGE(std::string(arch) << ": batch vs one-by-one max |diff| " << r.max_abs << ", top-1 agreement " << r.top1);
    CHECK(r.max_abs <= 1e-3 * r.max_ref);
    CHECK(r.top1 == 1.0);
  }
}

TEST_CASE("rollback then re-decode equals the plain run") {
  for (const char* arch : {"llama", "qwen3", "gemma3"}) {
    const Golden g = load_golden(arch);
    auto model = Model::load(tiny_model(arch), quiet_load());
    ThreadPool pool(1);
    Context plain(*model, opts(), pool), rolled(*model, opts(), pool);
    // plain: 70 tokens then the 10 "accepted" ones; rolled: 70, 10 "draft" tokens (another
    // slice of the sequence), rollback 10, then the same 10 accepted ones.
    run_batch(plain, g.tokens, 0, 70);
    const std::vector<float> want = run_batch(plain, g.tokens, 70, 80);
    run_batch(rolled, g.tokens, 0, 70);
    run_batch(rolled, g.tokens, 120, 130);
    CHECK(rolled.kv_next_pos(0) == 80);
    rolled.kv_rollback(0, 10);
    CHECK(rolled.kv_next_pos(0) == 70);
    const std::vector<float> got = run_batch(rolled, g.tokens, 70, 80);
    CHECK_MESSAGE(bit_equal(got, want), std::string(arch));
  }
}

TEST_CASE("rollback deeper than a sliding-window ring keeps is refused") {
  const Golden g = load_golden("gemma3");
  auto model = Model::load(tiny_model("gemma3"), quiet_load());
  ThreadPool pool(1);
  Context ctx(*model, opts(256, 8), pool);  // local rings hold window 24 + ubatch 8 = 32 slots
  run_batch(ctx, g.tokens, 0, 100);
  CHECK_NOTHROW(ctx.kv_rollback(0, 5));
  CHECK_THROWS_AS(ctx.kv_rollback(0, 40), Error);
  CHECK(ctx.kv_next_pos(0) == 95);  // a refused rollback changes nothing
}

TEST_CASE("greedy decoding is bit-reproducible run to run") {
  const Golden g = load_golden("qwen3");
  auto model = Model::load(tiny_model("qwen3"), quiet_load());
  ThreadPool pool(2);  // threads split rows; the result must not depend on scheduling
  std::vector<float> runs[2];
  for (auto& out : runs) {
    Context ctx(*model, opts(), pool);
    out = run_batch(ctx, g.tokens, 0, 40);
    std::vector<int32_t> gen{static_cast<int32_t>(argmax(out.data() + 39 * g.n_vocab, g.n_vocab))};
    for (int i = 0; i < 30; ++i) {  // greedy continuation
      Batch b;
      b.add(gen.back(), -1, 0, true);
      auto l = ctx.decode(b);
      out.insert(out.end(), l.begin(), l.end());
      gen.push_back(argmax(l.data(), g.n_vocab));
    }
  }
  CHECK(bit_equal(runs[0], runs[1]));
}

TEST_CASE("quantized KV caches stay close to f16") {
  // The f32-weight model: with quantized weights the engine also quantizes activations, and
  // any KV perturbation re-rolls that rounding noise, hiding what the KV type itself costs.
  const Golden g = load_golden("llama-f32");
  auto model = Model::load(tiny_model("llama-f32"), quiet_load());
  ThreadPool pool(1);
  auto run = [&](DType type) {
    ContextOptions o = opts();
    o.k_type = o.v_type = type;
    Context ctx(*model, o, pool);
    std::vector<float> l = run_batch(ctx, g.tokens, 0, 100);
    auto more = run_one_by_one(ctx, g.tokens, 100, 150);
    l.insert(l.end(), more.begin(), more.end());
    return std::make_pair(l, ctx.kv_bytes_per_token());
  };
  const auto [f32, f32_bytes] = run(DType::F32);
  const auto [f16, f16_bytes] = run(DType::F16);
  const auto [q8, q8_bytes] = run(DType::Q8_0);
  const auto [q4, q4_bytes] = run(DType::Q4_0);
  // 2 layers x (K + V) x 32 elements per token; q8_0 blocks are 34 bytes per 32, q4_0 18.
  CHECK(f32_bytes == 2 * 2 * 32 * 4);
  CHECK(f16_bytes == 2 * 2 * 32 * 2);
  CHECK(q8_bytes == 2 * 2 * 34);
  CHECK(q4_bytes == 2 * 2 * 18);
  const size_t rows = 150;
  const Agreement r32 = compare(f32, g.row(0), rows, g.n_vocab);
  const Agreement r16 = compare(f16, g.row(0), rows, g.n_vocab);
  const Agreement r8 = compare(q8, g.row(0), rows, g.n_vocab);
  const Agreement r4 = compare(q4, g.row(0), rows, g.n_vocab);
  MESSAGE("KV type vs the f64 reference, max |logit err| (scale " << r16.max_ref << "): f32 " << r32.max_abs << ", f16 "
                                                                  << r16.max_abs << ", q8_0 " << r8.max_abs << " (top-1 "
                                                                  << r8.top1 << "), q4_0 " << r4.max_abs << " (top-1 "
                                                                  << r4.top1 << ")");
  CHECK(r32.max_abs < 1e-5 * r32.max_ref);
  CHECK(r16.max_abs < 1e-3 * r16.max_ref);
  CHECK(r8.max_abs < 0.01 * r8.max_ref);
  CHECK(r8.top1 >= 0.98);
  CHECK(r4.max_abs < 0.08 * r4.max_ref);
  CHECK(r4.top1 >= 0.9);
  CHECK(r4.max_abs > r8.max_abs);  // 4-bit must cost more than 8-bit, or the type was ignored
  CHECK(r8.max_abs > r16.max_abs);
}

TEST_CASE("two sequences in one batch match two separate runs") {
  const Golden g = load_golden("qwen2");
  auto model = Model::load(tiny_model("qwen2"), quiet_load());
  ThreadPool pool(1);
  ContextOptions o = opts();
  o.n_seq = 2;
  Context both(*model, o, pool), single(*model, opts(), pool);
  Batch b;
  for (int i = 0; i < 20; ++i) b.add(g.tokens[i], i, 0, true);
  for (int i = 0; i < 20; ++i) b.add(g.tokens[50 + i], i, 1, true);
  auto span = both.decode(b);
  std::vector<float> mixed(span.begin(), span.end());
  const std::vector<float> s0 = run_batch(single, g.tokens, 0, 20);
  single.kv_clear();
  const std::vector<float> s1 = run_batch(single, g.tokens, 50, 70);
  const size_t V = g.n_vocab;
  const Agreement r0 = compare({mixed.begin(), mixed.begin() + 20 * V}, s0.data(), 20, g.n_vocab);
  const Agreement r1 = compare({mixed.begin() + 20 * V, mixed.end()}, s1.data(), 20, g.n_vocab);
  CHECK(r0.max_abs <= 1e-3 * r0.max_ref);
  CHECK(r1.max_abs <= 1e-3 * r1.max_ref);
  CHECK(both.kv_n_tokens(0) == 20);
  CHECK(both.kv_n_tokens(1) == 20);
}

TEST_CASE("a full context errors with token counts by default") {
  const Golden g = load_golden("llama");
  auto model = Model::load(tiny_model("llama"), quiet_load());
  ThreadPool pool(1);
  Context ctx(*model, opts(64, 32), pool);
  run_batch(ctx, g.tokens, 0, 60);
  try {
    run_batch(ctx, g.tokens, 60, 70);
    FAIL("expected ContextFull");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::ContextFull);
    CHECK(std::string(e.what()).find("holds 60 tokens, 10 more exceed n_ctx 64") != std::string::npos);
  }
  CHECK(ctx.kv_n_tokens(0) == 60);
}

TEST_CASE("context shift keeps n_keep tokens and continues") {
  const Golden g = load_golden("llama");
  auto model = Model::load(tiny_model("llama"), quiet_load());
  ThreadPool pool(1);
  ContextOptions o = opts(64, 16);
  o.policy = ContextPolicy::Shift;
  o.n_keep = 4;
  Context ctx(*model, o, pool);
  run_batch(ctx, g.tokens, 0, 64);
  // The next token does not fit: (64 - 4) / 2 = 30 tokens after the first 4 are dropped.
  std::vector<float> l = run_batch(ctx, g.tokens, 64, 65);
  CHECK(ctx.kv_n_tokens(0) == 35);
  CHECK(ctx.kv_next_pos(0) == 35);
  for (float x : l) REQUIRE(std::isfinite(x));
  // The shifted cache must behave like a cache that holds those 35 tokens at positions
  // 0..34: compare the next logits with a fresh context fed the kept tokens. Hidden states
  // of kept tokens saw the dropped ones, so only closeness (not equality) is expected.
  std::vector<int32_t> kept(g.tokens.begin(), g.tokens.begin() + 4);
  kept.insert(kept.end(), g.tokens.begin() + 34, g.tokens.begin() + 65);
  kept.push_back(g.tokens[65]);
  Context fresh(*model, opts(64, 16), pool);
  const std::vector<float> ref = run_batch(fresh, kept, 0, kept.size());
  const std::vector<float> got = run_batch(ctx, g.tokens, 65, 66);
  const int V = g.n_vocab;
  const Agreement r = compare(got, ref.data() + (kept.size() - 1) * V, 1, V);
  MESSAGE("after shift vs fresh re-evaluation: max |diff| " << r.max_abs << " (scale " << r.max_ref << ")");
  CHECK(std::isfinite(r.max_abs));
}

TEST_CASE("bad batches are refused before touching the cache") {
  auto model = Model::load(tiny_model("llama"), quiet_load());
  ThreadPool pool(1);
  Context ctx(*model, opts(), pool);
  Batch b;
  b.add(5, 0, 0, true);
  b.add(999, 1, 0, true);  // outside the 256-token vocabulary
  CHECK_THROWS_AS(ctx.decode(b), Error);
  CHECK(ctx.kv_n_tokens(0) == 0);
  Batch gap;
  gap.add(5, 3, 0, true);  // the sequence is empty, position 3 skips 0..2
  CHECK_THROWS_AS(ctx.decode(gap), Error);
  Batch seq;
  seq.add(5, 0, 1, true);  // only sequence 0 exists
  CHECK_THROWS_AS(ctx.decode(seq), Error);
}

TEST_CASE("a memory plan that does not fit is refused") {
  auto model = Model::load(tiny_model("llama"), quiet_load());
  ThreadPool pool(1);
  ContextOptions o = opts(256, 64);
  o.memory_limit = model->weight_bytes() + 1000;  // weights fit, KV + scratch do not
  try {
    Context ctx(*model, o, pool);
    FAIL("expected OutOfMemory");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::OutOfMemory);
    CHECK(std::string(e.what()).find("KV cache") != std::string::npos);
  }
}

TEST_CASE("hyperparameters are read as the architectures define them") {
  auto gemma = Model::load(tiny_model("gemma3"), quiet_load());
  const Hparams& hp = gemma->hparams();
  CHECK(hp.arch == "gemma3");
  CHECK(hp.n_layer == 6);
  for (int il = 0; il < 6; ++il) CHECK(gemma->arch().attention[il].window == (il != 5 ? 24 : 0));
  CHECK(hp.rope_neox);
  CHECK(hp.rope_freq_scale == doctest::Approx(0.125));
  CHECK(gemma->arch().attention[5].rope_freq_scale == doctest::Approx(0.125));
  CHECK(gemma->arch().attention[0].rope_freq_base == doctest::Approx(10000));
  auto llama = Model::load(tiny_model("llama"), quiet_load());
  CHECK_FALSE(llama->hparams().rope_neox);
  CHECK(llama->hparams().head_dim == 32);
  CHECK(llama->hparams().n_head_kv == 2);
}
