// Mixture-of-experts families end to end on tiny synthetic models: the files hold 3-D expert
// tensors with llama.cpp's keys and quantization rules, load and run with finite logits;
// a sequence's logits are bitwise the same alone and batched with other sequences (rows of
// a step grouped by expert across sequences); the scheduler gives each request exactly
// what it gets alone.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "engine/scheduler.h"
#include "eval/bench.h"
#include "gguf/gguf.h"
#include "models/model_support.h"
#include "models/scheduler_support.h"
#include "moe_invariance.h"
#include "moe_models.h"
#include "quantize/mix.h"
#include "util/error.h"

using namespace ember;
using namespace ember::test;

TEST_CASE("MoE synth files hold 3-D experts with llama.cpp's keys, load and run") {
  for (const char* arch : kMoeArchs) {
    const std::string arch_name = arch;
    CAPTURE(arch_name);
    const std::string path = tiny_moe_model(arch);
    const gguf::File f = gguf::File::open(path);
    const std::string a = std::string(f.get_string("general.architecture"));
    CHECK(a == (std::string(arch) == "mixtral" ? "llama" : arch));
    CHECK(f.get_u32(a + ".expert_count") == 8);
    CHECK(f.get_u32(a + ".expert_used_count") == 2);
    const gguf::TensorInfo* down = f.find_tensor("blk.1.ffn_down_exps.weight");
    REQUIRE(down);
    const int64_t n_ff_exp = std::string(arch).starts_with("qwen") ? 256 : 512;
    CHECK(down->ne[0] == n_ff_exp);
    CHECK(down->ne[1] == 256);
    CHECK(down->ne[2] == 8);
    CHECK(f.find_tensor("blk.0.ffn_gate_inp.weight")->type == DType::F32);  // routers are not quantized
    // Q4_K_M of 2 layers: ffn_down_exps of layer 1 (the last eighth) gets Q6_K, layer 0 keeps
    // Q4_K; with 8 experts attn_v and attn_k get Q8_0 and attn_output Q5_K, as llama.cpp's
    // llama_tensor_get_type.
    CHECK(down->type == DType::Q6_K);
    CHECK(f.find_tensor("blk.0.ffn_down_exps.weight")->type == DType::Q4_K);
    CHECK(f.find_tensor("blk.0.ffn_up_exps.weight")->type == DType::Q4_K);
    CHECK(f.find_tensor("blk.0.attn_v.weight")->type == DType::Q8_0);
    CHECK(f.find_tensor("blk.0.attn_k.weight")->type == DType::Q8_0);
    CHECK(f.find_tensor("blk.0.attn_output.weight")->type == DType::Q5_K);
    if (std::string(arch) == "qwen2moe") CHECK(f.find_tensor("blk.1.ffn_down_shexp.weight")->type == DType::Q6_K);

    auto model = Model::load(path, quiet_load());
    CHECK(model->hparams().n_expert == 8);
    ThreadPool pool(2);
    Context ctx(*model, options(1), pool);
    const std::vector<int32_t> p = prompt_of(20, 3);
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
}

TEST_CASE("MoE: a file whose experts do not match the keys is refused in one line") {
  auto o = tiny_moe_options("qwen3moe", "f32");
  TempDir dir("moe-bad");
  ThreadPool pool(1);
  o.shape.n_expert_used = 9;
  CHECK_THROWS_WITH_AS(synth::synth_model(o, dir.file("bad.gguf"), &pool), doctest::Contains("experts"), ember::Error);
}

TEST_CASE("MoE: a sequence's logits are bitwise the same alone and batched with other sequences") {
  for (const char* arch : kMoeArchs) {
    for (const char* type : {"q4_k_m", "q8_0", "f16"}) {
      if (std::string(arch) != "qwen3moe" && std::string(type) != "q4_k_m") continue;
      const std::string arch_name = arch;
      CAPTURE(arch_name);
      CAPTURE(type);
      check_logits_alone_equal_batched(*Model::load(tiny_moe_model(arch, type), quiet_load()));
    }
  }
}

TEST_CASE("MoE: concurrent scheduled requests give exactly what each gives alone") {
  for (const char* arch : {"qwen3moe", "qwen2moe"}) {
    const std::string arch_name = arch;
    CAPTURE(arch_name);
    // All at once, and chunked prefill beside decodes.
    check_scheduled_equal_alone(*Model::load(tiny_moe_model(arch), quiet_load()), 6, 500, {512, 16});
  }
}

TEST_CASE("quantize rules for experts follow llama.cpp: routers F32, down by layer, 8-expert bumps") {
  const auto q4km = quantize::parse_file_type("q4_k_m");
  const quantize::TypePlan plan(q4km, 16, true, {}, kMoeQuantRules, 8);
  const std::vector<int64_t> shape{2048, 1024, 8};
  CHECK(plan.type_for("blk.3.ffn_gate_inp.weight", {2048, 8}) == DType::F32);
  CHECK(plan.type_for("blk.0.ffn_down_exps.weight", {1024, 2048, 8}) == DType::Q6_K);
  CHECK(plan.type_for("blk.4.ffn_down_exps.weight", {1024, 2048, 8}) == DType::Q6_K);  // (4 - 2) % 3 == 2
  CHECK(plan.type_for("blk.5.ffn_down_exps.weight", {1024, 2048, 8}) == DType::Q4_K);
  CHECK(plan.type_for("blk.5.ffn_gate_exps.weight", shape) == DType::Q4_K);
  CHECK(plan.type_for("blk.5.attn_v.weight", {2048, 512}) == DType::Q8_0);
  const quantize::TypePlan many(q4km, 16, true, {}, kMoeQuantRules, 64);  // no bumps beyond 8 experts
  CHECK(many.type_for("blk.5.attn_v.weight", {2048, 512}) == DType::Q4_K);
  CHECK(many.type_for("blk.5.attn_output.weight", {2048, 2048}) == DType::Q4_K);
}

TEST_CASE("MoE decode roofline: a token reads the experts it is routed to, not all of them") {
  auto model = Model::load(tiny_moe_model("qwen3moe"), quiet_load());
  uint64_t all = 0, experts = 0;
  for (const gguf::TensorInfo& t : model->gguf().tensors()) {
    all += t.nbytes;
    if (std::string(t.name).ends_with("_exps.weight")) experts += t.nbytes;
  }
  REQUIRE(experts > 0);
  // Tied output: token_embd is read whole as the output matrix. 2 of 8 experts per token.
  CHECK(eval::decode_bytes_per_token(*model, 0, 0) == all - experts + experts / 8 * 2);
}
