// Issue 29's RoPE variants and dense families at the model level: what the loader reads from
// the keys and tensors `synth` writes (checked against closed forms of llama.cpp's rules),
// how a layer's RoPE parameters come out of them, and that the families run. Their
// numerics against llama.cpp are tools/ppl-vs-llamacpp's.
#include <doctest/doctest.h>

#include <cmath>

#include "gguf/gguf.h"
#include "model/hparams.h"
#include "model/layers.h"
#include "model/model.h"
#include "model/weights.h"
#include "models/model_support.h"
#include "models/synth_family.h"
#include "util/error.h"

using namespace ember;
using namespace ember::test;

namespace {

std::vector<float> last_logits(const Model& model, int n_ctx, int n_tokens) {
  ThreadPool pool(1);
  ContextOptions o;
  o.n_ctx = n_ctx;
  Context ctx(model, quiet(o), pool);
  std::vector<int32_t> tokens;
  for (int i = 0; i < n_tokens; ++i) tokens.push_back(1 + (37 * i + 11) % 900);
  auto all = run_batch(ctx, tokens, 0, tokens.size());
  return {all.end() - model.hparams().n_vocab, all.end()};
}

}  // namespace

TEST_CASE("llama3: rope_freqs.weight follows Llama 3's rule and reaches every layer's RoPE") {
  TempDir dir("rope-families");
  const auto model = Model::load(synth_family(dir, "llama3"), quiet_load());
  const Hparams& hp = model->hparams();
  REQUIRE(hp.n_rot == 16);
  const auto& attn = model->arch().attention;
  REQUIRE(attn.size() == 2);
  const float* f = attn[0].rope_factors;
  REQUIRE(f != nullptr);
  REQUIRE(attn[1].rope_factors != nullptr);
  for (int i = 0; i < 8; ++i) CHECK(attn[1].rope_factors[i] == f[i]);  // every layer reads the one tensor
  // Pair i's wavelength 2 pi 10000^(2i/16) against the original context 32: below 32/4 the
  // frequency is kept (factor 1), above 32 divided by 8, between interpolated smoothly.
  CHECK(f[0] == 1.0f);                                  // wavelength 6.3
  CHECK(f[7] == 8.0f);                                  // 2 pi 10000^(14/16) = 20k
  const double wl = 2 * M_PI * std::pow(10000.0, 2.0 / 16);  // pair 1: 19.9, in the band
  const double smooth = (32 / wl - 1) / (4 - 1);
  CHECK(f[1] == doctest::Approx(1 / ((1 - smooth) / 8 + smooth)));
  const RopeParams p = rope_params(hp, attn[0]);
  CHECK(p.freq_factors == f);
  CHECK(p.ext_factor == 0.0f);
  CHECK(p.mscale == 1.0f);
  // The factors change the logits: the same weights without them rotate differently.
  auto plain_options = family_options("llama3");
  plain_options.shape.rope_scaling = RopeScaling::None;
  ThreadPool pool(1);
  synth::synth_model(plain_options, dir.file("plain.gguf"), &pool);
  const auto plain = Model::load(dir.file("plain.gguf"), quiet_load());
  const auto a = last_logits(*model, 64, 20), b = last_logits(*plain, 64, 20);
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
  CHECK(diff > 1e-3);
}

TEST_CASE("yarn: the keys give ggml's ramp dims, the angles' scale and llama.cpp's magnitude") {
  TempDir dir("rope-families");
  const auto model = Model::load(synth_family(dir, "yarn"), quiet_load());
  const Hparams& hp = model->hparams();
  CHECK(hp.rope_freq_scale == doctest::Approx(0.125));
  CHECK(hp.n_ctx_orig == 32);
  CHECK(hp.rope_ext_factor == 1.0f);
  // llama.cpp: yarn_attn_factor = mscale(8) / (1 + 0.1 ln 8) = 1, then ggml multiplies by
  // 1 + 0.1 ln 8 in the kernel.
  CHECK(hp.rope_attn_factor == doctest::Approx(1.0));
  const RopeParams p = rope_params(hp, model->arch().attention[0]);
  CHECK(p.mscale == doctest::Approx(1.0 + 0.1 * std::log(8.0)));
  // ggml_rope_yarn_corr_dims(16, 32, 10000, 32, 1): 16 ln(32 / (b 2 pi)) / (2 ln 10000)
  // floored for beta_fast 32 (-1.6: 0) and ceiled for beta_slow 1 (1.41: 2).
  CHECK(p.corr_low == 0.0f);
  CHECK(p.corr_high == 2.0f);
  CHECK(p.ext_factor == 1.0f);
  CHECK(p.freq_factors == nullptr);
}

TEST_CASE("phi3: LongRoPE's short factors up to the original context, long ones beyond") {
  TempDir dir("rope-families");
  const auto model = Model::load(synth_family(dir, "phi3"), quiet_load());
  const Hparams& hp = model->hparams();
  CHECK(hp.rope_neox);
  // phi3's converter: attn_factor sqrt(1 + ln(256 / 32) / ln 32)
  CHECK(hp.rope_attn_factor == doctest::Approx(std::sqrt(1 + std::log(8.0) / std::log(32.0))));
  const LayerAttention& a = model->arch().attention[1];
  REQUIRE(a.rope_factors != nullptr);
  REQUIRE(a.rope_factors_long != nullptr);
  CHECK(a.for_context(hp, 32).rope_factors == a.rope_factors);
  CHECK(a.for_context(hp, 33).rope_factors == a.rope_factors_long);
  CHECK(a.rope_factors_long[7] == doctest::Approx(8.0));  // synth's long factors rise to the factor
  CHECK(rope_params(hp, a).mscale == doctest::Approx(hp.rope_attn_factor));
  // A context of 32 and one of 64 rotate differently from the first token on.
  const auto short_ctx = last_logits(*model, 32, 12), long_ctx = last_logits(*model, 64, 12);
  double diff = 0;
  for (size_t i = 0; i < short_ctx.size(); ++i) diff = std::max(diff, static_cast<double>(std::abs(short_ctx[i] - long_ctx[i])));
  CHECK(diff > 1e-4);
}

TEST_CASE("phi3: the fused tensors are bound as row ranges of the file's") {
  TempDir dir("rope-families");
  const std::string path = synth_family(dir, "phi3");
  const gguf::File f = gguf::File::open(path);
  TensorBinder b(f);  // views into the file
  const gguf::TensorInfo* qkv = f.find_tensor("blk.0.attn_qkv.weight");
  REQUIRE(qkv != nullptr);
  CHECK(qkv->ne[1] == 64 + 2 * 32);  // q rows, then k and v of 2 heads of 16
  const MatView k = b.matmul_matrix_rows("blk.0.attn_qkv.weight", 64, 128, 64, 32);
  CHECK(k.rows == 32);
  CHECK(k.data == static_cast<const uint8_t*>(qkv->data) + 64 * k.row_stride);
  CHECK_THROWS_AS(b.matmul_matrix_rows("blk.0.attn_qkv.weight", 64, 128, 100, 32), ember::Error);
  const gguf::TensorInfo* up = f.find_tensor("blk.0.ffn_up.weight");
  CHECK(up->ne[1] == 2 * 96);
}

TEST_CASE("gemma2: even layers slide, odd ones see everything; soft-caps 50 and 30") {
  TempDir dir("rope-families");
  const auto model = Model::load(synth_family(dir, "gemma2"), quiet_load());
  const auto& attn = model->arch().attention;
  CHECK(attn[0].window == 8);
  CHECK(attn[1].window == 0);
  CHECK(attn[0].softcap == 50.0f);
  CHECK(attn[0].scale == doctest::Approx(1.0 / std::sqrt(16.0)));
  CHECK(attn[0].rope_freq_base == attn[1].rope_freq_base);
  const gguf::File& f = model->gguf();
  CHECK(f.get_f32("gemma2.final_logit_softcapping") == 30.0f);
  const auto logits = last_logits(*model, 64, 20);
  for (float v : logits) REQUIRE(std::abs(v) <= 30.0f);  // the final soft-cap bounds them
}

TEST_CASE("synth: a RoPE scaling factor below 1 is refused in one line") {
  TempDir dir("rope-families");
  auto o = family_options("yarn");
  o.shape.rope_factor = 0.5f;  // no extension
  ThreadPool pool(1);
  CHECK_THROWS_AS(synth::synth_model(o, dir.file("z.gguf"), &pool), ember::Error);
}

TEST_CASE("the new families are batch-invariant: a sequence decoded beside another gives its bits alone") {
  TempDir dir("rope-families");
  for (const std::string name : {"llama3", "yarn", "gemma2", "phi3"}) {
    CAPTURE(name);
    const auto model = Model::load(synth_family(dir, name, "q8_0"), quiet_load());
    ThreadPool pool(2);
    ContextOptions o;
    o.n_ctx = 64;
    o.n_seq = 2;
    Context both(*model, quiet(o), pool), alone(*model, quiet(o), pool);
    std::vector<int32_t> a, b;
    for (int i = 0; i < 15; ++i) a.push_back(1 + (31 * i + 5) % 900), b.push_back(1 + (17 * i + 9) % 900);
    // Prompt of a alone, then a's prompt with b's in one batch; then a decode step of each.
    const auto a_alone = run_batch(alone, a, 0, 12);
    Batch mixed;
    for (int i = 0; i < 12; ++i) mixed.add(a[i], -1, 0, true);
    for (int i = 0; i < 9; ++i) mixed.add(b[i], -1, 1, true);
    const auto span = both.decode(mixed);
    const size_t V = model->hparams().n_vocab;
    CHECK(std::equal(a_alone.begin(), a_alone.end(), span.begin()));
    const auto a_next_alone = run_batch(alone, a, 12, 13);
    Batch step;
    step.add(a[12], -1, 0, true);
    step.add(b[9], -1, 1, true);
    const auto next = both.decode(step);
    CHECK(std::equal(a_next_alone.begin(), a_next_alone.end(), next.begin()));
    CHECK(next.size() == 2 * V);
  }
}

TEST_CASE("yarn_attn_factor is llama.cpp's: closed forms with and without a log multiplier") {
  // Without: mscale(f, 1) / (1 + 0.1 ln f) = 1; ggml's kernel then scales by 1 + 0.1 ln f.
  CHECK(yarn_attn_factor(4.0f, 0.0f) == doctest::Approx(1.0));
  CHECK(yarn_attn_factor(32.0f, 0.0f) == doctest::Approx(1.0));
  // DeepSeek-style factor 40, log multiplier 0.1707: (1 + 0.1 ln 40) / (1 + 0.01707 ln 40),
  // divided by 1 + 0.1 ln 40.
  const double l = std::log(40.0);
  CHECK(yarn_attn_factor(40.0f, 0.1707f) == doctest::Approx(1.0 / (1.0 + 0.01707 * l)));
  CHECK(yarn_attn_factor(40.0f, 0.1707f) * (1.0 + 0.1 * l) == doctest::Approx((1.0 + 0.1 * l) / (1.0 + 0.01707 * l)));
}
