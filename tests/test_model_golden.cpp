// Each family's forward pass against an independent numpy reference (tools/reference/):
// tiny random-weight GGUFs, 200 positions each, prompt processing in chunks of 64 for the
// first half and single-token decode for the second. Quantized weights (Q8_0/Q4_0) are
// multiplied against 8-bit-quantized activations by the engine, as ggml does, hence the
// tolerance relative to the logit scale rather than float epsilon.
#include <doctest/doctest.h>

#include <functional>

#include "models/model_support.h"

using namespace ember;
using namespace ember::test;

// Rows where the reference's best logit leads the runner-up by more than `margin`: there
// the argmax is not a near-tie that any rounding could flip, so the engine must agree.
static double decided_top1(const std::vector<float>& got, const Golden& g, double margin) {
  size_t n = 0, same = 0;
  for (size_t t = 0; t < g.tokens.size(); ++t) {
    std::vector<float> r(g.row(t), g.row(t) + g.n_vocab);
    std::partial_sort(r.begin(), r.begin() + 2, r.end(), std::greater<float>());
    if (r[0] - r[1] <= margin) continue;
    ++n;
    same += argmax(got.data() + t * g.n_vocab, g.n_vocab) == argmax(g.row(t), g.n_vocab);
  }
  return n ? static_cast<double>(same) / n : 1.0;
}

static void check_family(const std::string& arch, double rel_tol, DType kv_type = DType::F16) {
  const Golden g = load_golden(arch);
  auto model = Model::load(tiny_model(arch), quiet_load());
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
}

// f32 weights and f32 KV: only float rounding separates engine and reference.
TEST_CASE("llama with f32 weights matches the numpy reference to rounding") {
  check_family("llama-f32", 1e-5, DType::F32);
}
TEST_CASE("llama matches the numpy reference") { check_family("llama", 0.03); }
TEST_CASE("qwen2 matches the numpy reference") { check_family("qwen2", 0.03); }
TEST_CASE("qwen3 matches the numpy reference") { check_family("qwen3", 0.03); }
TEST_CASE("gemma3 matches the numpy reference") { check_family("gemma3", 0.03); }
