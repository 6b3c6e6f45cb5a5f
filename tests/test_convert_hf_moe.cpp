// `ember convert hf` on the mixture-of-experts classes, with tiny Hugging Face checkpoints
// committed under tests/models/hf-tiny-<family>/ (tools/reference/make_tiny_hf_moe.py):
//  - each converts to llama.cpp's layout: per-expert 2-D tensors stacked into the 3-D
//    ffn_{gate,up,down}_exps, routers F32, the MoE keys;
//  - ember's logits on the converted file match the float64 numpy reference run on the HF
//    checkpoint's own tensors (HF's RoPE and row order, experts one by one) to float rounding,
//    which checks the stacking, Mixtral's Q/K permutation, OLMoE's full-row q/k norms,
//    qwen2moe's gated shared expert and each family's renormalisation;
//  - transformers v5's fused expert layout converts to the same bytes as per-expert tensors;
//  - routing the family's GGUF cannot express is refused in one line.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "convert/hf.h"
#include "convert/safetensors.h"
#include "convert_test_util.h"
#include "hf_test_util.h"
#include "models/model_support.h"
#include "util/error.h"
#include "util/thread_pool.h"

using namespace ember;
using namespace ember::test;

namespace {

std::string hf_folder(const std::string& family) {
  return std::string(EMBER_SOURCE_DIR) + "/tests/models/hf-tiny-" + family;
}

struct MoeCase {
  const char* family;
  const char* arch;          // general.architecture of the converted file
  int64_t n_ff_exp;          // ffn_*_exps rows per expert
  bool writes_exp_width;     // expert_feed_forward_length written (moe_intermediate_size)
  int64_t n_ff_shexp;        // 0: no shared expert
};
constexpr MoeCase kCases[] = {{"qwen3moe", "qwen3moe", 16, true, 0},
                              {"qwen2moe", "qwen2moe", 16, true, 24},
                              {"mixtral", "llama", 16, false, 0},
                              {"olmoe", "olmoe", 16, false, 0}};

// A copy of a committed folder whose config.json has `from` replaced by `to`.
std::string edited_copy(const TempDir& dir, const std::string& family, const std::string& from, const std::string& to) {
  const std::string out = dir.file(family + "-edited");
  std::filesystem::copy(hf_folder(family), out, std::filesystem::copy_options::recursive);
  std::ifstream in(out + "/config.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  std::ofstream(out + "/config.json") << text;
  return out;
}

// A copy of a committed folder with each layer's experts in transformers v5's fused layout:
// mlp.experts.gate_up_proj [n_expert, 2 n_ff, n_embd] (gate rows first, no ".weight"),
// mlp.experts.down_proj [n_expert, n_embd, n_ff].
std::string fused_copy(const TempDir& dir, const std::string& family, int n_layer, int n_expert) {
  const std::string out = dir.file(family + "-fused");
  std::filesystem::copy(hf_folder(family), out, std::filesystem::copy_options::recursive);
  const convert::SafetensorsModel src = convert::SafetensorsModel::open(hf_folder(family));
  auto values = [](const convert::SafeTensor& t) {
    std::vector<float> v(static_cast<size_t>(t.n_elements()));
    t.read_row(0, t.n_elements(), v.data());
    return v;
  };
  std::map<std::string, StTensor> tensors;
  for (const auto& [name, t] : src.tensors())
    if (name.find(".experts.") == std::string::npos) tensors[name] = {"BF16", t.shape, values(t)};
  for (int il = 0; il < n_layer; ++il) {
    const std::string p = fmt::format("model.layers.{}.mlp.experts.", il);
    StTensor gate_up{"BF16", {}, {}}, down{"BF16", {}, {}};
    for (int e = 0; e < n_expert; ++e) {
      for (const char* part : {"gate_proj", "up_proj"}) {
        const auto v = values(*src.find(fmt::format("{}{}.{}.weight", p, e, part)));
        gate_up.values.insert(gate_up.values.end(), v.begin(), v.end());
      }
      const convert::SafeTensor& d = *src.find(fmt::format("{}{}.down_proj.weight", p, e));
      const auto v = values(d);
      down.values.insert(down.values.end(), v.begin(), v.end());
      down.shape = {n_expert, d.shape[0], d.shape[1]};
      gate_up.shape = {n_expert, 2 * d.shape[1], d.shape[0]};
    }
    tensors[p + "gate_up_proj"] = gate_up;
    tensors[p + "down_proj"] = down;
  }
  write_safetensors(out + "/model.safetensors", tensors);
  return out;
}

}  // namespace

TEST_CASE("convert hf: transformers v5's fused experts convert as the per-expert tensors do") {
  TempDir dir("hf-moe");
  ThreadPool pool(2);
  for (const char* family : {"qwen3moe", "qwen2moe", "olmoe"}) {
    CAPTURE(std::string(family));
    convert::convert_hf(hf_folder(family), dir.file("split.gguf"), DType::F32, &pool);
    convert::convert_hf(fused_copy(dir, family, 2, 4), dir.file("fused.gguf"), DType::F32, &pool);
    const gguf::File a = gguf::File::open(dir.file("split.gguf")), b = gguf::File::open(dir.file("fused.gguf"));
    REQUIRE(a.tensors().size() == b.tensors().size());
    for (const gguf::TensorInfo& t : a.tensors()) {
      const gguf::TensorInfo* u = b.find_tensor(t.name);
      REQUIRE(u);
      CHECK(u->nbytes == t.nbytes);
      CHECK_MESSAGE(std::memcmp(u->data, t.data, t.nbytes) == 0, std::string(t.name));
    }
    std::filesystem::remove_all(dir.file(std::string(family) + "-fused"));
  }
}

TEST_CASE("convert hf: MoE checkpoints stack their experts as llama.cpp's converter does") {
  TempDir dir("hf-moe");
  ThreadPool pool(2);
  for (const MoeCase& c : kCases) {
    const std::string family = c.family;
    CAPTURE(family);
    const std::string out = dir.file(std::string(c.family) + "-q8.gguf");
    convert::convert_hf(hf_folder(c.family), out, DType::Q8_0, &pool);
    const gguf::File f = gguf::File::open(out);
    std::string problem;
    check_written_gguf(f, &problem);
    CHECK(problem == "");
    const std::string a = c.arch;
    CHECK(f.get_string("general.architecture") == a);
    CHECK(f.get_u32(a + ".expert_count") == 4);
    CHECK(f.get_u32(a + ".expert_used_count") == 2);
    CHECK(f.find_u32(a + ".expert_feed_forward_length").has_value() == c.writes_exp_width);
    CHECK(f.find_u32(a + ".expert_shared_feed_forward_length").value_or(0) == static_cast<uint32_t>(c.n_ff_shexp));
    for (const char* name : {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}) {
      const gguf::TensorInfo* t = f.find_tensor(std::string("blk.1.") + name + ".weight");
      REQUIRE(t);
      const bool down = std::string(name) == "ffn_down_exps";
      CHECK(t->ne[0] == (down ? c.n_ff_exp : 32));
      CHECK(t->ne[1] == (down ? 32 : c.n_ff_exp));
      CHECK(t->ne[2] == 4);
      CHECK(t->type == (down ? DType::F16 : DType::Q8_0));  // rows of 16 are no whole Q8_0 block
    }
    CHECK(f.find_tensor("blk.0.ffn_gate_inp.weight")->type == DType::F32);  // routers stay F32
    if (c.n_ff_shexp) CHECK(f.find_tensor("blk.0.ffn_gate_inp_shexp.weight")->type == DType::F32);
  }
}

TEST_CASE("convert hf: converted MoE checkpoints match the numpy reference on the HF tensors") {
  TempDir dir("hf-moe");
  ThreadPool pool(2);
  for (const MoeCase& c : kCases) {
    const std::string family = c.family;
    CAPTURE(family);
    const std::string out = dir.file(std::string(c.family) + ".gguf");
    convert::convert_hf(hf_folder(c.family), out, DType::F32, &pool);
    // f32 weights, f32 KV: only float rounding separates ember from the float64 reference.
    check_model(out, load_golden_file("hf-tiny-" + family), family, 1e-5, DType::F32);
  }
}

TEST_CASE("convert hf: MoE routing the GGUF cannot express is refused in one line") {
  TempDir dir("hf-moe");
  auto refused = [&](const std::string& family, const std::string& from, const std::string& to, const char* says) {
    CAPTURE(family);
    CAPTURE(to);
    const std::string folder = edited_copy(dir, family, from, to);
    CHECK_THROWS_WITH_AS(convert::convert_hf(folder, dir.file("o.gguf"), DType::F32, nullptr), doctest::Contains(says),
                         Error);
    std::filesystem::remove_all(folder);
  };
  refused("qwen3moe", "\"norm_topk_prob\": true", "\"norm_topk_prob\": false", "norm_topk_prob is false");
  refused("olmoe", "\"norm_topk_prob\": false", "\"norm_topk_prob\": true", "never renormalises");
  refused("qwen2moe", "\"mlp_only_layers\": []", "\"mlp_only_layers\": [1]", "mlp_only_layers");
  refused("qwen2moe", "\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 2", "decoder_sparse_step");
  refused("olmoe", "\"clip_qkv\": null", "\"clip_qkv\": 8.0", "clip_qkv");
  refused("mixtral", "\"num_experts_per_tok\": 2", "\"num_experts_per_tok\": 5", "num_experts_per_tok 5");
  refused("qwen3moe", "\"num_experts\": 4", "\"num_experts\": 5", "mlp.gate.weight has shape [4, 32]");
}
