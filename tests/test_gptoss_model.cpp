// gpt-oss end to end on tiny synthetic files (tests/moe_models.h: 2 layers, width 256, 8
// experts of which 2 used, window 16 on layer 0): the file holds what llama.cpp's converter
// and MXFP4_MOE quantization write (MXFP4 experts, Q8_0 matrices, F32 biases, sinks and
// routers); the family binds sinks, the alternating window and the biases; a sequence's
// logits are bitwise the same alone and batched, and scheduled requests get what they get
// alone. The block's arithmetic is test_moe_block's (a plain loop of build_moe_ffn).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "engine/scheduler.h"
#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "models/model_support.h"
#include "models/scheduler_support.h"
#include "moe_invariance.h"
#include "moe_models.h"
#include "quantize/mix.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

using namespace ember;
using namespace ember::test;

TEST_CASE("gpt-oss MXFP4_MOE synth file: llama.cpp's keys, tensors and types") {
  const gguf::File f = gguf::File::open(tiny_moe_model("gpt-oss", "mxfp4_moe"));
  CHECK(f.get_string("general.architecture") == "gpt-oss");
  CHECK(f.get_u32("general.file_type") == 38);  // LLAMA_FTYPE_MOSTLY_MXFP4_MOE
  CHECK(f.get_u32("gpt-oss.expert_count") == 8);
  CHECK(f.get_u32("gpt-oss.expert_used_count") == 2);
  CHECK(f.get_u32("gpt-oss.expert_feed_forward_length") == 256);
  CHECK(f.get_u32("gpt-oss.attention.sliding_window") == 16);
  const auto type = [&](const std::string& name) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    REQUIRE_MESSAGE(t, name);
    return t->type;
  };
  for (const char* t : {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"})
    CHECK(type(std::string("blk.1.") + t) == DType::MXFP4);
  for (const char* t : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight"})
    CHECK(type(std::string("blk.0.") + t) == DType::Q8_0);
  CHECK(type("output.weight") == DType::Q8_0);
  CHECK(type("token_embd.weight") == DType::Q8_0);
  for (const char* t : {"ffn_gate_inp.weight", "ffn_gate_inp.bias", "ffn_gate_exps.bias", "ffn_down_exps.bias",
                        "attn_sinks.weight", "attn_q.bias", "attn_output.bias", "post_attention_norm.weight"})
    CHECK(type(std::string("blk.0.") + t) == DType::F32);
  const gguf::TensorInfo* down_b = f.find_tensor("blk.1.ffn_down_exps.bias");
  CHECK(down_b->ne[0] == 256);  // [n_embd, n_expert]
  CHECK(down_b->ne[1] == 8);
  CHECK(f.find_tensor("blk.0.attn_sinks.weight")->ne[0] == 4);  // [n_head]
}

TEST_CASE("gpt-oss binds sinks on every layer and the window on the even ones; it runs to finite logits") {
  auto model = Model::load(tiny_moe_model("gpt-oss", "mxfp4_moe"), quiet_load());
  const Hparams& hp = model->hparams();
  CHECK(hp.rope_neox);
  CHECK(hp.moe_routing.gating == MoeGating::SoftmaxSelected);
  CHECK_FALSE(hp.moe_routing.norm_weights);
  CHECK(hp.moe_act == Activation::SwiGLUOai);
  const auto& attn = model->arch().attention;
  REQUIRE(attn.size() == 2);
  CHECK(attn[0].window == 16);
  CHECK(attn[1].window == 0);
  CHECK(attn[0].sinks != nullptr);
  CHECK(attn[1].sinks != nullptr);
  CHECK(attn[0].scale == doctest::Approx(0.125f));  // 1/sqrt(n_rot = 64)
  ThreadPool pool(2);
  Context ctx(*model, options(1), pool);
  const std::vector<int32_t> p = prompt_of(40, 3);
  const std::vector<float> logits = run_batch(ctx, p, 0, p.size());
  double sum2 = 0;
  for (float v : logits) {
    REQUIRE(std::isfinite(v));
    sum2 += static_cast<double>(v) * v;
  }
  const double rms = std::sqrt(sum2 / static_cast<double>(logits.size()));
  CHECK(rms > 0.1);
  CHECK(rms < 50.0);
}

TEST_CASE("gpt-oss: a sequence's logits are bitwise the same alone and batched with other sequences") {
  for (const char* type : {"mxfp4_moe", "f32"}) {
    CAPTURE(type);
    check_logits_alone_equal_batched(*Model::load(tiny_moe_model("gpt-oss", type), quiet_load()));
  }
}

TEST_CASE("gpt-oss: concurrent scheduled requests give exactly what each gives alone") {
  check_scheduled_equal_alone(*Model::load(tiny_moe_model("gpt-oss", "mxfp4_moe"), quiet_load()), 5, 700, {16});
}

TEST_CASE("MXFP4_MOE rules follow llama.cpp: experts MXFP4, other matrices Q8_0, routers and vectors F32") {
  const quantize::TypePlan plan(quantize::parse_file_type("mxfp4_moe"), 24, true, {}, kMoeQuantRules, 32);
  CHECK(plan.type_for("blk.3.ffn_down_exps.weight", {2880, 2880, 32}) == DType::MXFP4);
  CHECK(plan.type_for("blk.3.ffn_gate_exps.weight", {2880, 2880, 32}) == DType::MXFP4);
  CHECK(plan.type_for("blk.3.attn_v.weight", {2880, 512}) == DType::Q8_0);
  CHECK(plan.type_for("output.weight", {2880, 201088}) == DType::Q8_0);
  CHECK(plan.type_for("token_embd.weight", {2880, 201088}) == DType::Q8_0);
  CHECK(plan.type_for("blk.3.ffn_gate_inp.weight", {2880, 32}) == DType::F32);
  CHECK(plan.type_for("blk.3.ffn_down_exps.bias", {2880, 32}) == DType::F32);
  CHECK(plan.type_for("blk.3.attn_sinks.weight", {64}) == DType::F32);
  CHECK(plan.type_for("blk.3.attn_q.weight", {4100, 2880}) == DType::F16);  // rows not whole 32-blocks
}

namespace {

// A byte-level BPE vocabulary GGUF holding `specials` as control tokens after two letters.
std::string harmony_vocab(const TempDir& dir, const std::vector<std::string>& specials) {
  std::vector<std::string> tokens{"a", "b"};
  std::vector<int32_t> types{1, 1};
  for (const std::string& s : specials) {
    tokens.push_back(s);
    types.push_back(3);  // control
  }
  gguf::Writer w;
  w.set_string("general.architecture", "gpt-oss");
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "gpt-4o");
  w.set_array_string("tokenizer.ggml.tokens", tokens);
  w.set_array_i32("tokenizer.ggml.token_type", types);
  w.set_array_string("tokenizer.ggml.merges", {"a b"});
  const std::string path = dir.file(std::to_string(specials.size()) + "-vocab.gguf");
  w.write(path);
  return path;
}

}  // namespace

TEST_CASE("Harmony: <|return|> and <|call|> end generation, and then <|end|> does not (as llama.cpp)") {
  TempDir dir("harmony-vocab");
  const Tokenizer harmony =
      Tokenizer::from_gguf(gguf::File::open(harmony_vocab(dir, {"<|end|>", "<|return|>", "<|call|>", "<|endoftext|>"})));
  CHECK_FALSE(harmony.is_eog(2));  // <|end|> closes a message, the reply goes on
  CHECK(harmony.is_eog(3));
  CHECK(harmony.is_eog(4));
  CHECK(harmony.is_eog(5));
  const Tokenizer plain = Tokenizer::from_gguf(gguf::File::open(harmony_vocab(dir, {"<|end|>", "<|return|>"})));
  CHECK(plain.is_eog(2));  // without <|call|> it is not Harmony: <|end|> ends the turn (phi3)
  CHECK(plain.is_eog(3));
}
