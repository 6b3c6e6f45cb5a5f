#include "convert/hf.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <vector>

#include "convert/hf_experts.h"
#include "convert/hf_sources.h"
#include "convert/hf_tokenizer.h"
#include "convert/safetensors.h"
#include "gguf/gguf_writer.h"
#include "model/arch.h"
#include "quantize/ftype.h"
#include "quantize/tensor_writer.h"
#include "util/error.h"
#include "util/json.h"
#include "util/mmap.h"

namespace ember::convert {

namespace fs = std::filesystem;

namespace {

const ArchInfo& arch_of(const json::Value& config, const std::string& src) {
  const json::Value* archs = json::find(config, "architectures");
  const std::string a = archs && archs->is_array() && !json::as_array(*archs).empty()
                            ? json::as_string(json::as_array(*archs)[0], src + ": architectures")
                            : std::string();
  const ArchInfo* arch = find_arch_by_hf_class(a);
  if (!arch) fail(ErrorKind::Unsupported, "{}: architecture '{}' does not convert (families: {})", src, a, known_archs());
  return *arch;
}

int64_t get_int(const json::Value& c, const char* key, int64_t fallback, const std::string& src) {
  const json::Value* v = json::find(c, key);
  if (!v || v->is_null()) {
    if (fallback < 0) fail(ErrorKind::Format, "{}: missing \"{}\"", src, key);
    return fallback;
  }
  return json::as_int(*v, src + ": " + key);
}

double get_double(const json::Value& c, const char* key, double fallback, const std::string& src) {
  const json::Value* v = json::find(c, key);
  return v && !v->is_null() ? json::as_double(*v, src + ": " + key) : fallback;
}

// Row `r` of llama.cpp's permuted Q/K (adjacent-pair RoPE) comes from this row of the HF
// matrix (half-split RoPE): within each head, output row 2i + j reads row j * hd/2 + i.
int64_t unpermuted_row(int64_t r, int64_t head_dim) {
  const int64_t head = r / head_dim, within = r % head_dim;
  return head * head_dim + (within % 2) * (head_dim / 2) + within / 2;
}

// config.json's rope_scaling kind ("" when absent).
std::string rope_scaling_kind(const json::Value& c) {
  const json::Value* rs = json::find(c, "rope_scaling");
  if (!rs || !rs->is_object()) return "";
  const json::Value* t = json::find(*rs, "rope_type") ? json::find(*rs, "rope_type") : json::find(*rs, "type");
  return t && t->is_string() ? json::as_string(*t) : "";
}

// Llama 3.1+ ("llama3": rope_freqs.weight, as convert_hf_to_gguf computes it) and YaRN go
// through ModelShape, which write_hparams and tensor_specs turn into keys and tensors.
void read_rope_scaling(const json::Value& c, ModelShape& s, const std::string& src) {
  const std::string kind = rope_scaling_kind(c);
  if (kind != "llama3" && kind != "yarn") return;
  const json::Value& rs = json::at(c, "rope_scaling");
  s.rope_scaling = kind == "llama3" ? RopeScaling::Llama3 : RopeScaling::Yarn;
  s.rope_factor = static_cast<float>(get_double(rs, "factor", kind == "llama3" ? 8.0 : -1.0, src));
  s.rope_orig_ctx = get_int(rs, "original_max_position_embeddings", kind == "llama3" ? 8192 : s.n_ctx, src);
  // ember's rope_factor_values uses Llama 3's own band (1 and 4); beta_fast/slow are llama.cpp's defaults.
  if (kind == "llama3" && (get_double(rs, "low_freq_factor", 1.0, src) != 1.0 ||
                           get_double(rs, "high_freq_factor", 4.0, src) != 4.0))
    fail(ErrorKind::Unsupported, "{}: llama3 rope_scaling with low/high frequency factors other than 1/4", src);
  if (kind == "yarn" && (get_double(rs, "beta_fast", 32.0, src) != 32.0 || get_double(rs, "beta_slow", 1.0, src) != 1.0))
    fail(ErrorKind::Unsupported, "{}: yarn rope_scaling with beta_fast/beta_slow other than 32/1", src);
}

// config.json's sizes; `c` is the language model's part of `config` (text_config when multimodal).
ModelShape read_shape(const ArchInfo& arch, const json::Value& config, const json::Value& c, const HfTensors& t,
                      const std::string& src) {
  ModelShape s;
  s.arch = &arch;
  s.n_vocab = t.embed->shape[0];
  s.n_embd = get_int(c, "hidden_size", -1, src);
  s.n_ff = get_int(c, "intermediate_size", -1, src);
  s.n_layer = get_int(c, "num_hidden_layers", -1, src);
  s.n_head = get_int(c, "num_attention_heads", -1, src);
  s.n_head_kv = get_int(c, "num_key_value_heads", s.n_head, src);
  s.head_dim = get_int(c, "head_dim", 0, src);
  s.n_ctx = get_int(c, "max_position_embeddings", 4096, src);
  s.rms_eps = static_cast<float>(get_double(c, "rms_norm_eps", 1e-6, src));  // transformers' default
  s.rope_base = static_cast<float>(get_double(c, "rope_theta", arch.defaults.rope_base, src));
  if (get_double(c, "partial_rotary_factor", 1.0, src) != 1.0)  // rope.dimension_count is the head size
    fail(ErrorKind::Unsupported, "{}: partial_rotary_factor (partial rotary) does not convert yet", src);
  if (arch.defaults.sliding_window > 0)
    s.sliding_window = get_int(c, "sliding_window", arch.defaults.sliding_window, src);
  const json::Value* tie = json::find(c, "tie_word_embeddings");
  if (!tie) tie = json::find(config, "tie_word_embeddings");
  s.tied_embeddings = !t.lm_head || (tie && tie->is_boolean() ? json::as_bool(*tie) : arch.defaults.tied_embeddings);
  read_rope_scaling(c, s, src);
  read_hf_experts(arch, c, s, src);
  return s;
}

void write_rope_scaling(gguf::Writer& w, const std::string& arch, const json::Value& c, const std::string& src) {
  const std::string kind = rope_scaling_kind(c);
  if (kind.empty()) return;
  const json::Value* rs = json::find(c, "rope_scaling");
  if (kind == "linear") {
    w.set_string(arch + ".rope.scaling.type", "linear");
    w.set_f32(arch + ".rope.scaling.factor", static_cast<float>(json::as_double(json::at(*rs, "factor"), src + ": rope_scaling.factor")));
  } else if (kind != "default" && kind != "llama3" && kind != "yarn") {
    fail(ErrorKind::Unsupported, "{}: rope_scaling type '{}' does not convert yet", src, kind);
  }
}

}  // namespace

ConvertStats convert_hf(const std::string& dir, const std::string& out_path, DType type, ThreadPool* pool) {
  const std::string config_path = (fs::path(dir) / "config.json").string();
  const json::Value config = json::parse(read_text_file(config_path), config_path);
  const ArchInfo& arch = arch_of(config, config_path);
  // Multimodal checkpoints keep the language model's settings under text_config.
  const json::Value& c = json::find(config, "text_config") ? json::at(config, "text_config") : config;
  const HfTensors tensors = open_tensors(dir);
  const ModelShape shape = read_shape(arch, config, c, tensors, config_path);

  gguf::Writer w;
  write_hparams(w, shape);
  write_rope_scaling(w, arch.name, c, config_path);
  w.set_string("general.name", fs::path(dir).filename().string());
  w.set_u32("general.file_type", quantize::file_type_of(type).llama_ftype);
  w.set_u32("general.quantization_version", 2);
  write_vocab(w, read_hf_tokenizer(dir, config, shape.n_vocab));

  ConvertStats stats;
  const int64_t hd = shape.head_size();
  for (const TensorSpec& spec : tensor_specs(shape)) {
    if (spec.role == TensorRole::RopeFactors) {  // computed from config.json, not in the checkpoint
      const std::vector<float> values = rope_factor_values(spec, shape);
      quantize::add_encoded_tensor(
          w, spec.name, spec.shape, DType::F32, [values](int64_t, float* out) { std::copy(values.begin(), values.end(), out); },
          pool);
      ++stats.n_tensors;
      continue;
    }
    const RowSources src = sources_of(spec, tensors, dir);
    const bool permute = arch.hf.permute_qk && (spec.role == TensorRole::AttnQ || spec.role == TensorRole::AttnK);
    const float add = spec.role == TensorRole::Norm ? arch.hf.norm_shift : 0.0f;
    const int64_t cols = spec.shape[0], rows_each = spec.shape.size() > 1 ? spec.shape[1] : 1;
    // Routers stay F32, as llama.cpp's converter keeps ffn_gate_inp(_shexp).
    const DType stored = spec.role == TensorRole::Router ? DType::F32 : type;
    quantize::add_encoded_tensor(
        w, spec.name, spec.shape, stored,
        [src, cols, rows_each, permute, add, hd](int64_t row, float* out) {
          const int64_t r = row % rows_each;  // row r of expert row / rows_each
          src.read(row / rows_each, permute ? unpermuted_row(r, hd) : r, cols, out);
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
