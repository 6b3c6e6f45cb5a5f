// `ember convert hf` on Hugging Face folders this test writes itself:
//  - aidreams260K re-expressed as an HF llama checkpoint (Q/K rows in HF's half-split order,
//    as Meta->HF conversion leaves them) must convert to exactly the tensors of
//    `convert llama2c`, which reproduce run.c: this pins the Q/K permutation;
//  - qwen2 / qwen3 / gemma3 folders (sharded, BF16, byte-level BPE tokenizer) convert to
//    files ember's loader accepts and runs, with gemma's norm +1 and qwen2's biases;
//  - SentencePiece tokenizer.model parsing matches llama.cpp's Llama 2 vocabulary GGUF.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include "util/thread_pool.h"
#include "convert/hf.h"
#include "convert/hf_tokenizer.h"
#include "convert/llama2c.h"
#include "convert/sentencepiece_model.h"
#include "convert_test_util.h"
#include "hf_test_util.h"
#include "model/model.h"
#include "tensor/fp16.h"
#include "util/error.h"
#include "util/json.h"

using namespace ember;
using test::json_escape;
using test::StTensor;
using test::write_safetensors;
using test::write_text;

namespace {

// llama2.c (Meta order, adjacent RoPE pairs) -> HF order (half-split pairs): within each head,
// HF row j*hd/2 + i holds Meta row 2i + j.
std::vector<float> to_hf_rows(const float* meta, int64_t rows, int64_t cols, int64_t hd) {
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t h = r / hd, within = r % hd, half = within / (hd / 2), i = within % (hd / 2);
    std::memcpy(&out[r * cols], meta + (h * hd + 2 * i + half) * cols, cols * 4);
  }
  return out;
}

}  // namespace

TEST_CASE("convert hf: an HF llama checkpoint converts to the same tensors as llama2.c") {
  test::TempDir dir("hf");
  const std::string model = test::shared_path("models/aidreams260K.bin");
  const std::string tok = test::shared_path("models/tok512.bin");
  const auto ck = convert::Llama2cCheckpoint::open(model);
  const auto& cfg = ck.config();
  const int64_t hd = cfg.head_size();

  std::map<std::string, StTensor> st;
  auto add = [&](const std::string& name, convert::Llama2cCheckpoint::Matrix m, bool permute = false) {
    StTensor t{"F32", m.rows == 1 ? std::vector<int64_t>{m.cols} : std::vector<int64_t>{m.rows, m.cols}, {}};
    t.values = permute ? to_hf_rows(m.data, m.rows, m.cols, hd)
                       : std::vector<float>(m.data, m.data + m.rows * m.cols);
    st[name] = std::move(t);
  };
  add("model.embed_tokens.weight", ck.token_embedding());
  add("model.norm.weight", ck.final_norm());
  for (int l = 0; l < cfg.n_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", ck.attn_norm(l));
    add(p + "post_attention_layernorm.weight", ck.ffn_norm(l));
    add(p + "self_attn.q_proj.weight", ck.wq(l), true);
    add(p + "self_attn.k_proj.weight", ck.wk(l), true);
    add(p + "self_attn.v_proj.weight", ck.wv(l));
    add(p + "self_attn.o_proj.weight", ck.wo(l));
    add(p + "mlp.gate_proj.weight", ck.w1(l));
    add(p + "mlp.down_proj.weight", ck.w2(l));
    add(p + "mlp.up_proj.weight", ck.w3(l));
  }
  const std::string hf = dir.file("aidreams-hf");
  std::filesystem::create_directories(hf);
  // Two shards and an index, as large checkpoints come.
  std::map<std::string, StTensor> a, b;
  std::string weight_map;
  for (auto& [name, t] : st) {
    const bool first = name.find("layers.2") == std::string::npos && name.find("layers.3") == std::string::npos;
    (first ? a : b)[name] = t;
    weight_map += fmt::format("{}\"{}\":\"{}\"", weight_map.empty() ? "" : ",", name,
                              first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors");
  }
  write_safetensors(hf + "/model-00001-of-00002.safetensors", a);
  write_safetensors(hf + "/model-00002-of-00002.safetensors", b);
  write_text(hf + "/model.safetensors.index.json", "{\"metadata\":{},\"weight_map\":{" + weight_map + "}}");
  write_text(hf + "/config.json",
             R"({"architectures":["LlamaForCausalLM"],"hidden_size":64,"intermediate_size":172,)"
             R"("num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":4,)"
             R"("max_position_embeddings":128,"rms_norm_eps":1e-05,"rope_theta":10000.0,)"
             R"("tie_word_embeddings":true,"vocab_size":512,"bos_token_id":1,"eos_token_id":2})");
  // A byte-fallback BPE tokenizer.json with the llama2.c pieces (SentencePiece spelling).
  const convert::Vocab vocab = convert::read_llama2c_tokenizer(tok, 512);
  std::string vocab_json;
  for (size_t i = 0; i < vocab.tokens.size(); ++i)
    vocab_json += fmt::format("{}\"{}\":{}", i ? "," : "", json_escape(vocab.tokens[i]), i);
  write_text(hf + "/tokenizer.json",
             "{\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\",\"special\":true},"
             "{\"id\":1,\"content\":\"<s>\",\"special\":true},{\"id\":2,\"content\":\"</s>\",\"special\":true}],"
             "\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,\"vocab\":{" +
                 vocab_json + "},\"merges\":[]}}");
  write_text(hf + "/tokenizer_config.json", R"({"bos_token":"<s>","eos_token":"</s>","add_bos_token":true})");

  ThreadPool pool(2);
  convert::convert_llama2c(model, tok, dir.file("ref.gguf"), DType::F32, &pool);
  const auto stats = convert::convert_hf(hf, dir.file("hf.gguf"), DType::F32, &pool);
  CHECK(stats.n_tensors == 38);
  const gguf::File ref = gguf::File::open(dir.file("ref.gguf"));
  const gguf::File got = gguf::File::open(dir.file("hf.gguf"));
  std::string problem;
  test::check_written_gguf(got, &problem);
  CHECK(problem == "");
  REQUIRE(got.tensors().size() == ref.tensors().size());
  for (const gguf::TensorInfo& r : ref.tensors()) {
    const gguf::TensorInfo* g = got.find_tensor(r.name);
    REQUIRE_MESSAGE(g, std::string(r.name));
    CHECK(g->nbytes == r.nbytes);
    CHECK_MESSAGE(std::memcmp(g->data, r.data, r.nbytes) == 0, std::string(r.name));
  }
  for (const char* key : {"llama.embedding_length", "llama.block_count", "llama.attention.head_count",
                          "llama.rope.dimension_count", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"})
    CHECK(got.get_u32(key) == ref.get_u32(key));
  const auto& gt = got.get_array("tokenizer.ggml.tokens");
  const auto& rt = ref.get_array("tokenizer.ggml.tokens");
  REQUIRE(gt.size() == rt.size());
  for (uint64_t i = 0; i < gt.size(); ++i) CHECK(gt.string_at(i) == rt.string_at(i));
  CHECK(got.get_array("tokenizer.ggml.token_type").int_at(3 + 0x41) == 6);
  CHECK(got.get_bool("tokenizer.ggml.add_bos_token"));

  // A Q8_0 conversion of the same folder: weights quantized, norms kept.
  convert::convert_hf(hf, dir.file("hf-q8.gguf"), DType::Q8_0, &pool);
  const gguf::File q8 = gguf::File::open(dir.file("hf-q8.gguf"));
  CHECK(q8.find_tensor("blk.0.attn_q.weight")->type == DType::Q8_0);
  CHECK(q8.find_tensor("blk.0.attn_norm.weight")->type == DType::F32);

  // Llama 3.1's rope_scaling: rope_freqs.weight computed as convert_hf_to_gguf does (head 16:
  // pair 0's wavelength 6.3 < 32 / 4 keeps factor 1, pair 7's 20k > 32 takes the factor 8).
  write_text(hf + "/config.json",
             R"({"architectures":["LlamaForCausalLM"],"hidden_size":64,"intermediate_size":172,)"
             R"("num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":4,)"
             R"("max_position_embeddings":256,"rms_norm_eps":1e-05,"rope_theta":10000.0,)"
             R"("rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,)"
             R"("original_max_position_embeddings":32},)"
             R"("tie_word_embeddings":true,"vocab_size":512,"bos_token_id":1,"eos_token_id":2})");
  CHECK(convert::convert_hf(hf, dir.file("hf-llama3.gguf"), DType::F32, &pool).n_tensors == 39);
  const gguf::File l3 = gguf::File::open(dir.file("hf-llama3.gguf"));
  const gguf::TensorInfo* freqs = l3.find_tensor("rope_freqs.weight");
  REQUIRE(freqs != nullptr);
  const auto f = test::tensor_values(*freqs);
  REQUIRE(f.size() == 8);
  CHECK(f[0] == 1.0f);
  CHECK(f[7] == 8.0f);
  CHECK(f[1] > 1.0f);
  CHECK(f[1] < 8.0f);
  CHECK_FALSE(l3.find_string("llama.rope.scaling.type").has_value());  // the tensor says it all
  auto model3 = Model::load(dir.file("hf-llama3.gguf"), {.print_plan = false});
  REQUIRE(model3->arch().attention[0].rope_factors != nullptr);
}

namespace {

// A random HF folder of a qwen2 / qwen3 / gemma3 model with a tiny byte-level BPE tokenizer.
struct TinyHf {
  std::map<std::string, StTensor> tensors;
};

// fused: phi3's qkv_proj (q, k, v rows) and gate_up_proj (gate, up rows) instead of the parts.
TinyHf write_tiny_hf(const std::string& dir, const std::string& arch_class, bool biases, bool qk_norm, bool gemma,
                     bool fused = false) {
  std::filesystem::create_directories(dir);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t E = 128, F = 256, L = 2, H = 4, KV = 2, HD = qk_norm ? 64 : 32, V = 300;
  TinyHf m;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale, float mean = 0) {
    StTensor t{"BF16", shape, {}};
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    for (int64_t i = 0; i < n; ++i) t.values.push_back(mean + scale * normal(rng));
    m.tensors[name] = t;
  };
  add("model.embed_tokens.weight", {V, E}, 0.2f);
  add("model.norm.weight", {E}, 0.05f, gemma ? 0.0f : 1.0f);
  for (int l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {E}, 0.05f, gemma ? 0.0f : 1.0f);
    add(p + "post_attention_layernorm.weight", {E}, 0.05f, gemma ? 0.0f : 1.0f);
    if (gemma) {
      add(p + "pre_feedforward_layernorm.weight", {E}, 0.05f);
      add(p + "post_feedforward_layernorm.weight", {E}, 0.05f);
    }
    add(p + "self_attn.q_proj.weight", {H * HD, E}, 0.09f);
    add(p + "self_attn.k_proj.weight", {KV * HD, E}, 0.09f);
    add(p + "self_attn.v_proj.weight", {KV * HD, E}, 0.09f);
    add(p + "self_attn.o_proj.weight", {E, H * HD}, 0.05f);
    if (biases) {
      add(p + "self_attn.q_proj.bias", {H * HD}, 0.1f);
      add(p + "self_attn.k_proj.bias", {KV * HD}, 0.1f);
      add(p + "self_attn.v_proj.bias", {KV * HD}, 0.1f);
    }
    if (qk_norm) {
      add(p + "self_attn.q_norm.weight", {HD}, 0.05f, gemma ? 0.0f : 1.0f);
      add(p + "self_attn.k_norm.weight", {HD}, 0.05f, gemma ? 0.0f : 1.0f);
    }
    add(p + "mlp.gate_proj.weight", {F, E}, 0.09f);
    add(p + "mlp.up_proj.weight", {F, E}, 0.09f);
    add(p + "mlp.down_proj.weight", {E, F}, 0.06f);
    if (fused) {
      auto fuse = [&](const std::string& name, std::initializer_list<const char*> parts) {
        StTensor t{"BF16", {0, E}, {}};
        for (const char* part : parts) {
          const StTensor& src = m.tensors.at(p + part);
          t.shape[0] += src.shape[0];
          t.values.insert(t.values.end(), src.values.begin(), src.values.end());
          m.tensors.erase(p + part);
        }
        m.tensors[p + name] = t;
      };
      fuse("self_attn.qkv_proj.weight", {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"});
      fuse("mlp.gate_up_proj.weight", {"mlp.gate_proj.weight", "mlp.up_proj.weight"});
    }
  }
  write_safetensors(dir + "/model.safetensors", m.tensors);
  write_text(dir + "/config.json",
             fmt::format(R"({{"architectures":["{}"],"hidden_size":{},"intermediate_size":{},"num_hidden_layers":{},)"
                         R"("num_attention_heads":{},"num_key_value_heads":{},"head_dim":{},)"
                         R"("max_position_embeddings":256,"rms_norm_eps":1e-06,"rope_theta":1000000.0,)"
                         R"("sliding_window":8,"tie_word_embeddings":true,"vocab_size":{}}})",
                         arch_class, E, F, L, H, KV, HD, V));
  // Byte-level BPE: the 256 byte symbols (GPT-2's byte-to-unicode map), two merges, one
  // special token; 300 embedding rows, so the vocabulary is padded.
  std::string vocab;
  int id = 0;
  auto sym = [](int b) {
    std::string s;
    int cp = b;
    if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
      static int n = 0;
      static std::map<int, int> seen;
      if (!seen.count(b)) seen[b] = 256 + n++;
      cp = seen[b];
    }
    if (cp < 0x80) s += static_cast<char>(cp);
    else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
  };
  for (int b = 0; b < 256; ++b) vocab += fmt::format("{}\"{}\":{}", id ? "," : "", json_escape(sym(b)), id), ++id;
  vocab += fmt::format(",\"he\":{},\"hel\":{}", id, id + 1);
  write_text(dir + "/tokenizer.json",
             "{\"added_tokens\":[{\"id\":258,\"content\":\"<|endoftext|>\",\"special\":true}],"
             "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"" +
                 json_escape(R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)") +
                 "\"},\"behavior\":\"Isolated\"},{\"type\":\"ByteLevel\",\"add_prefix_space\":false}]},"
                 "\"model\":{\"type\":\"BPE\",\"vocab\":{" + vocab + "},\"merges\":[\"h e\",[\"he\",\"l\"]]}}");
  write_text(dir + "/tokenizer_config.json", R"({"eos_token":"<|endoftext|>","chat_template":"{{ messages }}"})");
  return m;
}

}  // namespace

TEST_CASE("convert hf: qwen2, qwen3, gemma3, gemma2 and phi3 folders load and run") {
  test::TempDir dir("hf");
  ThreadPool pool(2);
  struct Case {
    const char* cls;
    const char* arch;
    bool biases, qk_norm, gemma, fused = false;
  };
  for (const Case& c : {Case{"Qwen2ForCausalLM", "qwen2", true, false, false},
                        Case{"Qwen3ForCausalLM", "qwen3", false, true, false},
                        Case{"Gemma3ForCausalLM", "gemma3", false, true, true},
                        Case{"Gemma2ForCausalLM", "gemma2", false, false, true},
                        Case{"Phi3ForCausalLM", "phi3", false, false, false, true}}) {
    CAPTURE(c.arch);
    const std::string hf = dir.file(c.arch);
    const TinyHf src = write_tiny_hf(hf, c.cls, c.biases, c.qk_norm, c.gemma, c.fused);
    const std::string out = dir.file(std::string(c.arch) + ".gguf");
    convert::convert_hf(hf, out, DType::F16, &pool);
    const gguf::File f = gguf::File::open(out);
    std::string problem;
    test::check_written_gguf(f, &problem);
    CHECK(problem == "");
    CHECK(f.get_string("general.architecture") == c.arch);
    CHECK(f.get_string("tokenizer.ggml.model") == "gpt2");
    CHECK(f.get_string("tokenizer.ggml.pre") == "qwen2");
    CHECK(f.get_array("tokenizer.ggml.tokens").size() == 300);
    CHECK(f.get_array("tokenizer.ggml.tokens").string_at(299) == "[PAD299]");
    CHECK(f.get_array("tokenizer.ggml.token_type").int_at(258) == 3);
    CHECK(f.get_array("tokenizer.ggml.merges").string_at(1) == "he l");
    CHECK(f.get_u32("tokenizer.ggml.eos_token_id") == 258);
    CHECK(f.get_string("tokenizer.chat_template") == "{{ messages }}");
    CHECK(f.find_tensor("output.weight") == nullptr);
    // Values: weights pass through (as F16 from BF16: exact for these magnitudes up to rounding),
    // gemma norms gain +1, qwen2 biases stay F32.
    const auto q = test::tensor_values(*f.find_tensor(c.fused ? "blk.1.attn_qkv.weight" : "blk.1.attn_q.weight"));
    const auto& hq = src.tensors.at(c.fused ? "model.layers.1.self_attn.qkv_proj.weight" : "model.layers.1.self_attn.q_proj.weight").values;
    double err = 0, ref = 0;
    for (size_t i = 0; i < q.size(); ++i) {
      const float want = bf16_to_f32(f32_to_bf16(hq[i]));
      err += (q[i] - want) * (q[i] - want);
      ref += want * want;
    }
    CHECK(err / ref < 1e-6);  // same row order: no permutation for these architectures
    const auto norm = test::tensor_values(*f.find_tensor("blk.0.attn_norm.weight"));
    const float hf_norm0 = bf16_to_f32(f32_to_bf16(src.tensors.at("model.layers.0.input_layernorm.weight").values[0]));
    CHECK(norm[0] == doctest::Approx(hf_norm0 + (c.gemma ? 1.0f : 0.0f)));
    if (c.biases) {
      CHECK(f.find_tensor("blk.0.attn_k.bias")->type == DType::F32);
    }
    if (c.gemma) CHECK(f.get_u32(std::string(c.arch) + ".attention.sliding_window") == 8);
    if (std::string(c.arch) == "gemma2") CHECK(f.get_f32("gemma2.attn_logit_softcapping") == 50.0f);

    auto model = Model::load(out, {.print_plan = false});
    Context ctx(*model, {.n_ctx = 32, .print_plan = false}, pool);
    Batch b;
    for (int i = 0; i < 5; ++i) b.add(10 + i, i, 0, i == 4);
    const auto logits = ctx.decode(b);
    REQUIRE(logits.size() == 300);
    for (float v : logits) REQUIRE(std::isfinite(v));
  }
}

TEST_CASE("convert hf: tokenizer.model parses to llama.cpp's Llama 2 vocabulary") {
  MappedFile file(test::shared_path("models/llama2-tokenizer.model"));
  const auto sp = convert::parse_sentencepiece_model(file.bytes(), file.path());
  const convert::Vocab v = convert::vocab_from_sentencepiece(sp);
  const gguf::File ref = gguf::File::open(test::shared_path("vocab/ggml-vocab-llama-spm.gguf"));
  const auto& tokens = ref.get_array("tokenizer.ggml.tokens");
  const auto& scores = ref.get_array("tokenizer.ggml.scores");
  const auto& types = ref.get_array("tokenizer.ggml.token_type");
  REQUIRE(v.tokens.size() == tokens.size());
  int mismatches = 0;
  for (uint64_t i = 0; i < tokens.size(); ++i) {
    mismatches += v.tokens[i] != tokens.string_at(i);
    mismatches += v.scores[i] != static_cast<float>(scores.float_at(i));
    mismatches += static_cast<int64_t>(v.types[i]) != types.int_at(i);
  }
  CHECK(mismatches == 0);
  CHECK(v.bos_id == ref.get_u32("tokenizer.ggml.bos_token_id"));
  CHECK(v.eos_id == ref.get_u32("tokenizer.ggml.eos_token_id"));
  CHECK(v.unk_id == 0u);
  CHECK(v.add_space_prefix == true);
  CHECK_THROWS_AS(convert::parse_sentencepiece_model(std::span<const uint8_t>(file.bytes().data(), 1000), "cut"),
                  Error);
}

TEST_CASE("convert hf: malformed inputs give one clear error") {
  test::TempDir dir("hf");
  const std::string hf = dir.file("bad");
  write_tiny_hf(hf, "Qwen2ForCausalLM", true, false, false);
  CHECK_THROWS_WITH_AS(json::parse("{\"a\": [1, 2,]}", "x.json"), doctest::Contains("x.json: JSON"), Error);
  CHECK(json::parse(R"({"s":"\u00e9\ud83d\ude00","n":-12,"f":1.5e3})", "t").at("s").get<std::string>() ==
        "\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(json::parse(R"({"n":-12})", "t").at("n").get<int64_t>() == -12);
  write_text(hf + "/config.json", R"({"architectures":["MambaForCausalLM"]})");
  CHECK_THROWS_WITH_AS(convert::convert_hf(hf, dir.file("o.gguf"), DType::F16, nullptr),
                       doctest::Contains("MambaForCausalLM"), Error);
  // A safetensors header pointing past the end of the file.
  write_tiny_hf(hf, "Qwen2ForCausalLM", true, false, false);
  std::fstream st(hf + "/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
  st.seekp(0);
  const uint64_t huge = 1ull << 40;
  st.write(reinterpret_cast<const char*>(&huge), 8);
  st.close();
  CHECK_THROWS_WITH_AS(convert::convert_hf(hf, dir.file("o.gguf"), DType::F16, nullptr),
                       doctest::Contains("header length"), Error);
  CHECK_FALSE(std::filesystem::exists(dir.file("o.gguf")));
}
