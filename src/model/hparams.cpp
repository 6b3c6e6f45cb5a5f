#include "model/hparams.h"

#include <cmath>
#include <fmt/format.h>

#include "gguf/gguf.h"
#include "util/error.h"

namespace ember {

static std::string key_of(const Hparams& hp, const char* key) { return fmt::format("{}.{}", hp.arch, key); }

std::optional<uint32_t> arch_u32(const gguf::File& file, const Hparams& hp, const char* key) {
  return file.find_u32(key_of(hp, key));
}

std::optional<float> arch_f32(const gguf::File& file, const Hparams& hp, const char* key) {
  return file.find_f32(key_of(hp, key));
}

std::vector<int> arch_per_layer(const gguf::File& file, const Hparams& hp, const char* key, int fallback) {
  const std::string k = key_of(hp, key);
  std::vector<int> out(hp.n_layer, fallback);
  const gguf::KeyValue* kv = file.find(k);
  if (kv && kv->type == gguf::ValueType::ARRAY) {
    const gguf::ArrayView* arr = &kv->array;
    if (arr->size() != static_cast<uint64_t>(hp.n_layer))
      fail(ErrorKind::Format, "{}: {} has {} entries for {} layers", file.source(), k, arr->size(), hp.n_layer);
    for (int il = 0; il < hp.n_layer; ++il) out[il] = static_cast<int>(arr->int_at(il));
  } else if (kv) {
    std::fill(out.begin(), out.end(), static_cast<int>(file.get_u32(k)));
  }
  return out;
}

static int require_positive(const gguf::File& file, const std::string& key, int64_t v, int64_t limit) {
  if (v <= 0 || v > limit) fail(ErrorKind::Format, "{}: {} = {} is out of range (1..{})", file.source(), key, v, limit);
  return static_cast<int>(v);
}

// All layers must agree for the fields ember keeps as scalars.
static int uniform(const gguf::File& file, const std::string& key, const std::vector<int>& v) {
  for (int x : v)
    if (x != v[0]) fail(ErrorKind::Unsupported, "{}: per-layer {} values differ; ember needs them equal", file.source(), key);
  return v.empty() ? 0 : v[0];
}

// RoPE scaling as llama.cpp reads it (llama_model::load_hparams, llama_context's cparams):
// "linear" and "yarn" scale positions by 1/factor; YaRN also mixes unscaled angles back in by
// pair (ext_factor 1) and corrects the magnitude; "longrope" (phi3) scales through its
// per-pair factor tensors, which the family binds; rope.scaling.attn_factor multiplies all.
static void read_rope_scaling(const gguf::File& file, Hparams& hp) {
  float factor = arch_f32(file, hp, "rope.scale_linear").value_or(0.0f);  // the older key
  const std::string type = std::string(file.find_string(key_of(hp, "rope.scaling.type")).value_or(""));
  const bool yarn = type == "yarn";
  if (!type.empty() && type != "none" && type != "linear" && !yarn && type != "longrope")
    fail(ErrorKind::Unsupported, "{}: rope scaling type '{}' is not supported (linear, yarn, longrope)", file.source(), type);
  if (!type.empty() && type != "none") factor = arch_f32(file, hp, "rope.scaling.factor").value_or(factor);
  if (factor != 0.0f && type != "none") {
    if (!(factor > 0.0f)) fail(ErrorKind::Format, "{}: rope scaling factor {} must be positive", file.source(), factor);
    hp.rope_freq_scale = 1.0f / factor;
  }
  hp.n_ctx_orig = static_cast<int>(arch_u32(file, hp, "rope.scaling.original_context_length").value_or(hp.n_ctx_train));
  if (hp.n_ctx_orig <= 0) fail(ErrorKind::Format, "{}: rope.scaling.original_context_length must be positive", file.source());
  hp.rope_attn_factor = arch_f32(file, hp, "rope.scaling.attn_factor").value_or(1.0f);
  if (!(hp.rope_attn_factor > 0.0f)) fail(ErrorKind::Format, "{}: rope.scaling.attn_factor must be positive", file.source());
  if (!yarn) return;
  hp.rope_ext_factor = arch_f32(file, hp, "rope.scaling.yarn_ext_factor").value_or(1.0f);
  hp.rope_beta_fast = arch_f32(file, hp, "rope.scaling.yarn_beta_fast").value_or(32.0f);
  hp.rope_beta_slow = arch_f32(file, hp, "rope.scaling.yarn_beta_slow").value_or(1.0f);
  if (hp.rope_ext_factor == 0.0f) return;
  hp.rope_attn_factor *= yarn_attn_factor(1.0f / hp.rope_freq_scale,
                                          arch_f32(file, hp, "rope.scaling.yarn_log_multiplier").value_or(0.0f));
}

float yarn_attn_factor(float factor, float log_mul) {
  auto mscale = [factor](float m) { return factor <= 1.0f ? 1.0f : 0.1f * m * std::log(factor) + 1.0f; };
  const float attn = log_mul != 0.0f ? mscale(1.0f) / mscale(log_mul) : mscale(1.0f);
  return attn / (1.0f + 0.1f * std::log(factor));
}

void read_common_hparams(const gguf::File& file, Hparams& hp) {
  constexpr int64_t kMaxDim = 1 << 20;
  hp.name = std::string(file.find_string("general.name").value_or(""));
  hp.n_embd = require_positive(file, key_of(hp, "embedding_length"), file.get_u32(key_of(hp, "embedding_length")), kMaxDim);
  hp.n_layer = require_positive(file, key_of(hp, "block_count"), file.get_u32(key_of(hp, "block_count")), 4096);
  hp.n_ctx_train = require_positive(file, key_of(hp, "context_length"), file.get_u32(key_of(hp, "context_length")), 1 << 26);

  hp.n_head = require_positive(file, key_of(hp, "attention.head_count"),
                               uniform(file, key_of(hp, "attention.head_count"), arch_per_layer(file, hp, "attention.head_count", 0)),
                               kMaxDim);
  hp.n_head_kv = uniform(file, key_of(hp, "attention.head_count_kv"),
                         arch_per_layer(file, hp, "attention.head_count_kv", hp.n_head));
  require_positive(file, key_of(hp, "attention.head_count_kv"), hp.n_head_kv, hp.n_head);
  if (hp.n_head % hp.n_head_kv != 0)
    fail(ErrorKind::Format, "{}: {} query heads are not a multiple of {} KV heads", file.source(), hp.n_head, hp.n_head_kv);

  hp.head_dim = static_cast<int>(arch_u32(file, hp, "attention.key_length").value_or(hp.n_embd / hp.n_head));
  hp.head_dim_v = static_cast<int>(arch_u32(file, hp, "attention.value_length").value_or(hp.head_dim));
  require_positive(file, key_of(hp, "attention.key_length"), hp.head_dim, kMaxDim);
  require_positive(file, key_of(hp, "attention.value_length"), hp.head_dim_v, kMaxDim);
  if (hp.head_dim_v != hp.head_dim)  // the attention op takes one head size for K and V
    fail(ErrorKind::Unsupported, "{}: key length {} differs from value length {}", file.source(), hp.head_dim, hp.head_dim_v);

  hp.n_ff = arch_per_layer(file, hp, "feed_forward_length", 0);
  for (int v : hp.n_ff) require_positive(file, key_of(hp, "feed_forward_length"), v, 1 << 24);

  hp.norm_eps = arch_f32(file, hp, "attention.layer_norm_rms_epsilon").value_or(1e-5f);
  if (!(hp.norm_eps > 0.0f && hp.norm_eps < 1.0f))
    fail(ErrorKind::Format, "{}: rms epsilon {} out of range", file.source(), hp.norm_eps);

  hp.n_rot = static_cast<int>(arch_u32(file, hp, "rope.dimension_count").value_or(hp.head_dim));
  if (hp.n_rot <= 0 || hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0)
    fail(ErrorKind::Format, "{}: rope.dimension_count {} must be even and <= head dim {}", file.source(), hp.n_rot, hp.head_dim);
  hp.rope_freq_base = arch_f32(file, hp, "rope.freq_base").value_or(10000.0f);
  if (!(hp.rope_freq_base > 1.0f)) fail(ErrorKind::Format, "{}: rope.freq_base {} must be > 1", file.source(), hp.rope_freq_base);

  read_rope_scaling(file, hp);

  const gguf::TensorInfo* emb = file.find_tensor("token_embd.weight");
  if (!emb) fail(ErrorKind::Format, "{}: required tensor token_embd.weight is missing", file.source());
  hp.n_vocab = require_positive(file, "token_embd.weight rows", emb->ne[1], 1 << 24);
}

}  // namespace ember
