#include "synth/synth.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gguf/gguf.h"
#include "gguf/gguf_writer.h"
#include "quantize/mix.h"
#include "quantize/tensor_writer.h"
#include "sampling/rng.h"
#include "util/error.h"

namespace ember::synth {

ModelShape default_shape(const ArchInfo& arch) {
  ModelShape s;
  s.arch = &arch;
  s.n_embd = 2048;
  s.n_layer = 22;
  s.n_head = 32;
  s.n_head_kv = 4;
  s.n_ff = 5632;
  s.n_ctx = 2048;
  s.rms_eps = arch.defaults.rms_eps;
  s.rope_base = arch.defaults.rope_base;
  s.sliding_window = arch.defaults.sliding_window;
  s.tied_embeddings = arch.defaults.tied_embeddings;
  // MoE families: the family's experts, each a quarter of the dense width (a shared
  // expert half of it), where its tensors have a width of their own.
  s.n_expert = arch.default_experts;
  s.n_expert_used = arch.default_experts_used;
  for (const BlockTensor& t : arch.file.block) {
    if (t.ne0 == Dim::FfExp || t.ne1 == Dim::FfExp) s.n_ff_exp = s.n_ff / 4;
    if (t.ne0 == Dim::FfShexp || t.ne1 == Dim::FfShexp) s.n_ff_shexp = s.n_ff / 2;
  }
  return s;
}

InitScale init_scale(const TensorSpec& spec, const ModelShape& hp) {
  const float fan_in = static_cast<float>(spec.fan_in());
  switch (spec.role) {
    case TensorRole::TokenEmbedding:
    case TensorRole::Output:
      return {0.0f, 2.5f / std::sqrt(static_cast<float>(hp.n_embd))};
    case TensorRole::Norm: return {1.0f, 0.02f};
    case TensorRole::Bias: return {0.0f, 0.02f};
    case TensorRole::AttnOutput:
    case TensorRole::FfnDown:
      return {0.0f, 1.0f / std::sqrt(fan_in * 2.0f * static_cast<float>(hp.n_layer))};
    case TensorRole::AttnQ: case TensorRole::AttnK: case TensorRole::AttnV:
    case TensorRole::FfnGate: case TensorRole::FfnUp: case TensorRole::Router:
      return {0.0f, 1.0f / std::sqrt(fan_in)};
    case TensorRole::RopeFactors: break;  // computed (rope_factor_values), not drawn
  }
  return {0.0f, 0.0f};
}

uint64_t tensor_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the name, then mixed with the seed
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  uint64_t state = seed ^ h;
  return splitmix64_next(state);
}

void fill_row(uint64_t tseed, int64_t row, InitScale scale, float* out, int64_t n) {
  Rng rng(tseed + static_cast<uint64_t>(row) * 0x9e3779b97f4a7c15ull);
  // Sum of four uniform 16-bit lanes of one 64-bit draw: mean 4 * 65535 / 2, variance
  // 4 * (65536^2 - 1) / 12 (Irwin-Hall), close to a normal and one generator call per value.
  constexpr float kMean = 2.0f * 65535.0f;
  const float k = scale.std / std::sqrt(4.0f * (65536.0f * 65536.0f - 1.0f) / 12.0f);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t u = rng.next_u64();
    const float s = static_cast<float>((u & 0xffff) + ((u >> 16) & 0xffff) + ((u >> 32) & 0xffff) + (u >> 48));
    out[i] = scale.mean + (s - kMean) * k;
  }
}

namespace {

// The vocabulary's tokenizer.* keys, the per-token arrays padded to n_vocab entries with
// control tokens (score 0) when it holds fewer.
void copy_tokenizer(const gguf::File& vocab, int64_t n_vocab, gguf::Writer& w) {
  constexpr int32_t kControl = 3;  // llama.cpp's LLAMA_TOKEN_TYPE_CONTROL
  const uint64_t n = static_cast<uint64_t>(n_vocab);
  for (const gguf::KeyValue& kv : vocab.metadata()) {
    if (!kv.key.starts_with("tokenizer.")) continue;
    const uint64_t have = kv.type == gguf::ValueType::ARRAY ? kv.array.size() : 0;
    if (have == n || (kv.key != "tokenizer.ggml.tokens" && kv.key != "tokenizer.ggml.scores" &&
                      kv.key != "tokenizer.ggml.token_type")) {
      w.copy_kv(kv);
    } else if (kv.key == "tokenizer.ggml.tokens") {
      std::vector<std::string> tokens;
      for (uint64_t i = 0; i < n; ++i)
        tokens.push_back(i < have ? std::string(kv.array.string_at(i)) : fmt::format("<|synth_pad_{}|>", i));
      w.set_array_string(kv.key, tokens);
    } else if (kv.key == "tokenizer.ggml.scores") {
      std::vector<float> scores(n, 0.0f);
      for (uint64_t i = 0; i < have; ++i) scores[i] = static_cast<float>(kv.array.float_at(i));
      w.set_array_f32(kv.key, scores);
    } else {
      std::vector<int32_t> types(n, kControl);
      for (uint64_t i = 0; i < have; ++i) types[i] = static_cast<int32_t>(kv.array.int_at(i));
      w.set_array_i32(kv.key, types);
    }
  }
}

}  // namespace

SynthStats synth_model(const SynthOptions& opt, const std::string& out_path, ThreadPool* pool) {
  const gguf::File vocab = gguf::File::open(opt.vocab_path);
  const gguf::ArrayView* tokens = vocab.find_array("tokenizer.ggml.tokens");
  if (!tokens || tokens->element_type() != gguf::ValueType::STRING || tokens->size() == 0)
    fail(ErrorKind::Format, "{}: no tokenizer.ggml.tokens string array: not a vocabulary GGUF", opt.vocab_path);
  ModelShape hp = opt.shape;
  hp.n_vocab = static_cast<int64_t>(tokens->size());
  if (opt.n_vocab != 0 && opt.n_vocab < hp.n_vocab)
    fail(ErrorKind::InvalidArgument, "--n-vocab {}: {} already holds {} tokens", opt.n_vocab, opt.vocab_path, hp.n_vocab);
  if (opt.n_vocab > hp.n_vocab) hp.n_vocab = opt.n_vocab;
  const auto specs = tensor_specs(hp);  // validates hp

  gguf::Writer w;
  write_hparams(w, hp);
  w.set_string("general.name", fmt::format("synth-{}-{}x{}", hp.arch->name, hp.n_layer, hp.n_embd));
  w.set_string("general.description", fmt::format("ember synth: random weights, seed {}", opt.seed));
  w.set_u32("general.file_type", opt.type.llama_ftype);
  w.set_u32("general.quantization_version", 2);
  copy_tokenizer(vocab, hp.n_vocab, w);

  const quantize::TypePlan plan(opt.type, static_cast<int>(hp.n_layer), !hp.tied_embeddings, {}, hp.arch->quant,
                                static_cast<int>(hp.n_expert));
  SynthStats stats;
  for (const TensorSpec& spec : specs) {
    const InitScale scale = init_scale(spec, hp);
    const uint64_t tseed = tensor_seed(opt.seed, spec.name);
    const int64_t n = spec.shape[0];
    std::vector<float> values;  // a computed tensor's (one row); rows are encoded at w.write()
    if (spec.role == TensorRole::RopeFactors) values = rope_factor_values(spec, hp);
    quantize::add_encoded_tensor(
        w, spec.name, spec.shape, plan.type_for(spec.name, spec.shape),
        [tseed, scale, n, values](int64_t row, float* out) {
          if (!values.empty()) std::copy(values.begin(), values.end(), out);
          else fill_row(tseed, row, scale, out, n);
        },
        pool);
    stats.n_params += static_cast<uint64_t>(spec.n_elements());
    ++stats.n_tensors;
  }
  w.write(out_path);
  stats.file_bytes = std::filesystem::file_size(out_path);
  return stats;
}

}  // namespace ember::synth
