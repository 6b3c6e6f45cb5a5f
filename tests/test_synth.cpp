// `ember synth`: models of every architecture load with ember's model loader, run a
// forward pass with finite logits in a realistic range, are reproducible from the seed and
// carry the vocabulary they were given.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "util/thread_pool.h"
#include "convert_test_util.h"
#include "model/model.h"
#include "synth/synth.h"
#include "util/error.h"

using namespace ember;

namespace {

const std::string kVocab = test::shared_path("vocab/ggml-vocab-llama-spm.gguf");

synth::SynthOptions tiny(const std::string& arch, const char* type) {
  synth::SynthOptions o;
  o.shape = synth::default_shape(require_arch(arch));
  o.shape.n_embd = 256;
  o.shape.n_layer = 2;
  o.shape.n_head = 4;
  o.shape.n_head_kv = 2;
  o.shape.n_ff = 512;
  o.shape.n_ctx = 256;
  if (arch == "gemma3" || arch == "qwen3") o.shape.head_dim = 128;  // != 256 / 4
  if (arch == "gemma3") o.shape.sliding_window = 16;
  o.vocab_path = kVocab;
  o.type = quantize::parse_file_type(type);
  o.seed = 7;
  return o;
}

}  // namespace

TEST_CASE("synth: every architecture loads and runs a forward pass with sane logits") {
  test::TempDir dir("synth");
  ThreadPool pool(2);
  // Every architecture as Q4_K_M (k-quants, Q6_K mixes, F32 norms); llama also as F16 and Q4_0.
  for (const std::string arch : {"llama", "qwen2", "qwen3", "gemma3", "gemma2", "phi3"}) {
    for (const char* type : {"q4_k_m", "f16", "q4_0"}) {
      if (arch != "llama" && std::string(type) != "q4_k_m") continue;
      CAPTURE(arch);
      CAPTURE(type);
      const std::string out = dir.file(arch + "-" + type + ".gguf");
      auto o = tiny(arch, type);
      // Tied embeddings halve the 32000-row work; llama F16 keeps a separate output matrix.
      o.shape.tied_embeddings = !(arch == "llama" && std::string(type) == "f16");
      const auto stats = synth::synth_model(o, out, &pool);
      CHECK(stats.n_params > 0);

      const gguf::File f = gguf::File::open(out);
      std::string problem;
      test::check_written_gguf(f, &problem);
      CHECK(problem == "");
      CHECK(f.get_string("general.architecture") == arch);
      CHECK(f.get_array("tokenizer.ggml.tokens").size() == 32000);
      CHECK(f.get_string("tokenizer.ggml.model") == "llama");
      for (const auto& spec : tensor_specs([&] {
             auto hp = o.shape;
             hp.n_vocab = 32000;
             return hp;
           }()))
        CHECK_MESSAGE(f.find_tensor(spec.name), spec.name);

      auto model = Model::load(out, {.print_plan = false});
      Context ctx(*model, {.n_ctx = 64, .print_plan = false}, pool);
      Batch b;
      const int32_t prompt[] = {1, 450, 4996, 17354, 1701, 432};
      for (int i = 0; i < 6; ++i) b.add(prompt[i], i, 0, i == 5);
      const auto logits = ctx.decode(b);
      REQUIRE(logits.size() == 32000);
      double sum = 0, sum2 = 0;
      size_t finite = 0;
      for (float v : logits) {
        finite += std::isfinite(v);
        sum += v;
        sum2 += static_cast<double>(v) * v;
      }
      REQUIRE(finite == logits.size());
      const double mean = sum / logits.size(), sd = std::sqrt(sum2 / logits.size() - mean * mean);
      // init_scale aims at a logit spread of ~2.5 for a unit-RMS final hidden state.
      CHECK(sd > 0.5);
      CHECK(sd < 10);
    }
  }
}

TEST_CASE("synth: the seed decides the weights, the thread count does not") {
  test::TempDir dir("synth");
  auto o = tiny("llama", "q8_0");
  o.shape.tied_embeddings = true;
  ThreadPool one(1), two(2);
  synth::synth_model(o, dir.file("a.gguf"), &one);
  synth::synth_model(o, dir.file("b.gguf"), &two);
  o.seed = 8;
  synth::synth_model(o, dir.file("c.gguf"), &two);
  const gguf::File a = gguf::File::open(dir.file("a.gguf"));
  const gguf::File b = gguf::File::open(dir.file("b.gguf"));
  const gguf::File c = gguf::File::open(dir.file("c.gguf"));
  REQUIRE(a.file_size() == b.file_size());
  CHECK(std::memcmp(a.bytes().data(), b.bytes().data(), a.file_size()) == 0);
  const auto* ta = a.find_tensor("blk.1.attn_q.weight");
  const auto* tc = c.find_tensor("blk.1.attn_q.weight");
  CHECK(std::memcmp(ta->data, tc->data, ta->nbytes) != 0);
}

TEST_CASE("synth: values follow the documented scales") {
  ModelShape hp = synth::default_shape(require_arch("llama"));
  hp.n_vocab = 1000;
  for (const auto& spec : tensor_specs(hp)) {
    if (spec.layer > 0) break;
    const auto scale = synth::init_scale(spec, hp);
    std::vector<float> row(static_cast<size_t>(spec.shape[0]) * 16);
    for (int r = 0; r < 16; ++r)
      synth::fill_row(synth::tensor_seed(3, spec.name), r, scale, row.data() + r * spec.shape[0], spec.shape[0]);
    double m = 0, s2 = 0;
    for (float v : row) m += v;
    m /= row.size();
    for (float v : row) s2 += (v - m) * (v - m);
    const double sd = std::sqrt(s2 / row.size());
    CAPTURE(spec.name);
    CHECK(std::abs(m - scale.mean) < 4 * scale.std / std::sqrt(static_cast<double>(row.size())) + 1e-6);
    CHECK(sd == doctest::Approx(scale.std).epsilon(0.05));
  }
  // Projections: 1/sqrt(fan_in); residual outputs shrink with depth; norms are 1.
  TensorSpec q{"blk.0.attn_q.weight", {2048, 2048}, TensorRole::AttnQ, 0};
  CHECK(synth::init_scale(q, hp).std == doctest::Approx(1.0 / std::sqrt(2048.0)));
  TensorSpec down{"blk.0.ffn_down.weight", {5632, 2048}, TensorRole::FfnDown, 0};
  CHECK(synth::init_scale(down, hp).std == doctest::Approx(1.0 / std::sqrt(5632.0 * 2 * 22)));
}

TEST_CASE("synth: bad shapes and vocabularies are refused with one clear error") {
  test::TempDir dir("synth");
  auto o = tiny("llama", "f16");
  o.shape.n_head = 3;  // 256 not divisible by 3
  CHECK_THROWS_AS(synth::synth_model(o, dir.file("x.gguf"), nullptr), Error);
  o = tiny("llama", "f16");
  o.vocab_path = test::shared_path("models/tok512.bin");
  CHECK_THROWS_AS(synth::synth_model(o, dir.file("x.gguf"), nullptr), Error);
  CHECK_FALSE(std::filesystem::exists(dir.file("x.gguf")));
  const std::string cmd = std::string(EMBER_BINARY) + " synth --arch mamba --vocab-from " + kVocab + " -o " +
                          dir.file("y.gguf") + " > " + dir.file("log") + " 2>&1";
  CHECK(WEXITSTATUS(std::system(cmd.c_str())) == 5);  // Unsupported
}

TEST_CASE("synth: --n-vocab pads the vocabulary with control tokens, a model and tokenizer of that size") {
  test::TempDir dir("synth");
  auto o = tiny("llama", "q8_0");
  o.shape.tied_embeddings = true;
  o.n_vocab = 32013;  // llama-spm holds 32000
  synth::synth_model(o, dir.file("padded.gguf"), nullptr);
  const gguf::File f = gguf::File::open(dir.file("padded.gguf"));
  for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"}) {
    CAPTURE(key);
    REQUIRE(f.find_array(key) != nullptr);
    CHECK(f.find_array(key)->size() == 32013);
  }
  const auto* tokens = f.find_array("tokenizer.ggml.tokens");
  CHECK(tokens->string_at(31999) == gguf::File::open(kVocab).find_array("tokenizer.ggml.tokens")->string_at(31999));
  CHECK(tokens->string_at(32012) == "<|synth_pad_32012|>");
  CHECK(f.find_array("tokenizer.ggml.token_type")->int_at(32000) == 3);
  CHECK(f.find_tensor("token_embd.weight")->ne[1] == 32013);
  LoadOptions lo;
  lo.print_plan = false;
  CHECK(Model::load(dir.file("padded.gguf"), lo)->hparams().n_vocab == 32013);

  o.n_vocab = 31999;  // fewer than the vocabulary holds
  CHECK_THROWS_AS(synth::synth_model(o, dir.file("short.gguf"), nullptr), Error);
}
