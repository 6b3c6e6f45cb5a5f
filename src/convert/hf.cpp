#include "convert/hf.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <filesystem>

#include "convert/hf_tokenizer.h"
#include "convert/safetensors.h"
#include "gguf/gguf_writer.h"
#include "quantize/ftype.h"
#include "quantize/tensor_writer.h"
#include "util/error.h"
#include "util/json.h"
#include "util/mmap.h"

namespace ember::convert {

namespace fs = std::filesystem;

namespace {

Arch arch_of(const json::Value& config, const std::string& src) {
  const json::Value* archs = config.find("architectures");
  const std::string a = archs && archs->is_array() && !archs->as_array().empty()
                            ? archs->as_array()[0].as_string(src + ": architectures")
                            : std::string();
  if (a == "LlamaForCausalLM" || a == "MistralForCausalLM") return Arch::Llama;
  if (a == "Qwen2ForCausalLM") return Arch::Qwen2;
  if (a == "Qwen3ForCausalLM") return Arch::Qwen3;
  if (a == "Gemma3ForCausalLM" || a == "Gemma3ForConditionalGeneration") return Arch::Gemma3;
  fail(ErrorKind::Unsupported, "{}: architecture '{}' does not convert (llama, mistral, qwen2, qwen3, gemma3)", src, a);
}

int64_t get_int(const json::Value& c, const char* key, int64_t fallback, const std::string& src) {
  const json::Value* v = c.find(key);
  if (!v || v->is_null()) {
    if (fallback < 0) fail(ErrorKind::Format, "{}: missing \"{}\"", src, key);
    return fallback;
  }
  return v->as_int(src + ": " + key);
}

double get_double(const json::Value& c, const char* key, double fallback, const std::string& src) {
  const json::Value* v = c.find(key);
  return v && !v->is_null() ? v->as_double(src + ": " + key) : fallback;
}

// The HF name (without the model prefix) of a GGUF block tensor "blk.N.<what>".
std::string hf_block_name(Arch arch, const std::string& what) {
  static const std::pair<const char*, const char*> common[] = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},
      {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_q.bias", "self_attn.q_proj.bias"},
      {"attn_k.bias", "self_attn.k_proj.bias"},
      {"attn_v.bias", "self_attn.v_proj.bias"},
      {"attn_q_norm.weight", "self_attn.q_norm.weight"},
      {"attn_k_norm.weight", "self_attn.k_norm.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"},
      {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"},
      {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
  };
  // Gemma 3 normalises before and after both sublayers; the others only before.
  if (what == "ffn_norm.weight")
    return arch == Arch::Gemma3 ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight";
  if (what == "post_attention_norm.weight") return "post_attention_layernorm.weight";
  for (const auto& [g, h] : common)
    if (what == g) return h;
  fail(ErrorKind::Internal, "no Hugging Face name for {}", what);
}

// Row `r` of llama.cpp's permuted Q/K (adjacent-pair RoPE) comes from this row of the HF
// matrix (half-split RoPE): within each head, output row 2i + j reads row j * hd/2 + i.
int64_t unpermuted_row(int64_t r, int64_t head_dim) {
  const int64_t head = r / head_dim, within = r % head_dim;
  return head * head_dim + (within % 2) * (head_dim / 2) + within / 2;
}

}  // namespace

ConvertStats convert_hf(const std::string& dir, const std::string& out_path, DType type, ThreadPool* pool) {
  const std::string config_path = (fs::path(dir) / "config.json").string();
  const json::Value config = json::parse(read_text_file(config_path), config_path);
  const Arch arch = arch_of(config, config_path);
  // Multimodal checkpoints keep the language model's settings under text_config.
  const json::Value& c = config.find("text_config") ? config.at("text_config") : config;

  const SafetensorsModel st = SafetensorsModel::open(dir);
  std::string prefix;
  for (const char* p : {"model.", "language_model.model.", "model.language_model."})
    if (st.find(std::string(p) + "embed_tokens.weight")) prefix = p;
  if (prefix.empty()) fail(ErrorKind::Format, "{}: no embed_tokens.weight tensor", dir);
  const SafeTensor& embed = *st.find(prefix + "embed_tokens.weight");
  if (embed.shape.size() != 2) fail(ErrorKind::Format, "{}: embed_tokens.weight is not 2-D", dir);
  const SafeTensor* lm_head = nullptr;
  for (const char* p : {"lm_head.weight", "language_model.lm_head.weight"})
    if (!lm_head) lm_head = st.find(p);

  HParams hp;
  hp.arch = arch;
  hp.n_vocab = embed.shape[0];
  hp.n_embd = get_int(c, "hidden_size", -1, config_path);
  hp.n_ff = get_int(c, "intermediate_size", -1, config_path);
  hp.n_layer = get_int(c, "num_hidden_layers", -1, config_path);
  hp.n_head = get_int(c, "num_attention_heads", -1, config_path);
  hp.n_head_kv = get_int(c, "num_key_value_heads", hp.n_head, config_path);
  hp.head_dim = get_int(c, "head_dim", 0, config_path);
  hp.n_ctx = get_int(c, "max_position_embeddings", 4096, config_path);
  hp.rms_eps = static_cast<float>(get_double(c, "rms_norm_eps", 1e-6, config_path));
  hp.rope_base = static_cast<float>(get_double(c, "rope_theta", arch == Arch::Llama ? 10000.0 : 1000000.0, config_path));
  if (arch == Arch::Gemma3) hp.sliding_window = get_int(c, "sliding_window", 512, config_path);
  const json::Value* tie = c.find("tie_word_embeddings");
  if (!tie) tie = config.find("tie_word_embeddings");
  hp.tied_embeddings = !lm_head || (tie && tie->is_bool() ? tie->as_bool() : arch == Arch::Gemma3);

  gguf::Writer w;
  write_hparams(w, hp);
  if (const json::Value* rs = c.find("rope_scaling"); rs && rs->is_object()) {
    const json::Value* t = rs->find("rope_type") ? rs->find("rope_type") : rs->find("type");
    const std::string kind = t && t->is_string() ? t->as_string() : "";
    if (kind == "linear") {
      w.set_string(std::string(arch_name(arch)) + ".rope.scaling.type", "linear");
      w.set_f32(std::string(arch_name(arch)) + ".rope.scaling.factor",
                static_cast<float>(rs->at("factor").as_double(config_path + ": rope_scaling.factor")));
    } else if (kind != "default" && !kind.empty()) {
      fail(ErrorKind::Unsupported, "{}: rope_scaling type '{}' does not convert yet", config_path, kind);
    }
  }
  w.set_string("general.name", fs::path(dir).filename().string());
  w.set_u32("general.file_type", quantize::file_type_of(type).llama_ftype);
  w.set_u32("general.quantization_version", 2);
  write_vocab(w, read_hf_tokenizer(dir, config, hp.n_vocab));

  ConvertStats stats;
  const int64_t hd = hp.head_size();
  for (const TensorSpec& spec : tensor_specs(hp)) {
    std::string hf;
    if (spec.name == "token_embd.weight") hf = prefix + "embed_tokens.weight";
    else if (spec.name == "output_norm.weight") hf = prefix + "norm.weight";
    else if (spec.name == "output.weight") hf = lm_head->name;
    else hf = fmt::format("{}layers.{}.{}", prefix, spec.layer,
                          hf_block_name(arch, spec.name.substr(spec.name.find('.', 4) + 1)));
    const SafeTensor* t = st.find(hf);
    if (!t) fail(ErrorKind::Format, "{}: tensor {} (for {}) is missing", dir, hf, spec.name);
    std::vector<int64_t> want(spec.shape.rbegin(), spec.shape.rend());  // PyTorch order
    if (t->shape != want)
      fail(ErrorKind::Format, "{}: tensor {} has shape [{}], {} expects [{}]", dir, hf, fmt::join(t->shape, ", "),
           spec.name, fmt::join(want, ", "));
    if (t->dtype != "F32" && t->dtype != "F16" && t->dtype != "BF16")
      fail(ErrorKind::Unsupported, "{}: tensor {} has dtype {}; only F32, F16 and BF16 convert", dir, hf, t->dtype);
    // llama GGUFs rotate adjacent pairs, HF llama checkpoints half-split pairs (see
    // unpermuted_row); qwen and gemma GGUFs keep HF's order and rotate "neox" style.
    const bool permute = arch == Arch::Llama && (spec.role == TensorRole::AttnQ || spec.role == TensorRole::AttnK);
    // Gemma stores norm weights as w with the norm computing x * (1 + w); GGUF holds 1 + w.
    const float add = arch == Arch::Gemma3 && spec.role == TensorRole::Norm ? 1.0f : 0.0f;
    const int64_t cols = spec.shape[0];
    quantize::add_encoded_tensor(
        w, spec.name, spec.shape, type,
        [t, cols, permute, add, hd](int64_t row, float* out) {
          t->read_row(permute ? unpermuted_row(row, hd) : row, cols, out);
          if (add != 0.0f)
            for (int64_t i = 0; i < cols; ++i) out[i] += add;
        },
        pool);
    stats.n_params += static_cast<uint64_t>(spec.n_elements());
    ++stats.n_tensors;
  }
  w.write(out_path);
  stats.file_bytes = fs::file_size(out_path);
  return stats;
}

}  // namespace ember::convert
