// What a GGUF of a family holds, read off its record (arch.h): the <arch>.* keys and the tensors with
// their names and shapes, as llama.cpp's converters write them. `convert` writes its output
// by this list and `synth` generates it.
#include <cmath>

#include <fmt/format.h>

#include "gguf/gguf_writer.h"
#include "model/arch.h"
#include "util/error.h"

namespace ember {

void validate(const ModelShape& s) {
  const std::pair<const char*, int64_t> positive[] = {
      {"vocabulary size", s.n_vocab}, {"embedding length", s.n_embd},
      {"feed-forward length", s.n_ff}, {"block count", s.n_layer},
      {"head count", s.n_head}, {"kv head count", s.n_head_kv},
      {"context length", s.n_ctx}};
  for (const auto& [what, v] : positive)
    if (v <= 0) fail(ErrorKind::InvalidArgument, "{} must be positive, got {}", what, v);
  if (s.head_dim < 0) fail(ErrorKind::InvalidArgument, "head size must be positive, got {}", s.head_dim);
  if (s.head_dim == 0 && s.n_embd % s.n_head != 0)
    fail(ErrorKind::InvalidArgument, "embedding length {} is not a multiple of the head count {}",
         s.n_embd, s.n_head);
  if (s.n_head % s.n_head_kv != 0)
    fail(ErrorKind::InvalidArgument, "head count {} is not a multiple of the kv head count {}",
         s.n_head, s.n_head_kv);
  if (s.head_size() % 2 != 0)
    fail(ErrorKind::InvalidArgument, "head size {} must be even for RoPE", s.head_size());
  if (!(s.rms_eps > 0)) fail(ErrorKind::InvalidArgument, "RMSNorm epsilon must be positive");
  if (!(s.rope_base > 0)) fail(ErrorKind::InvalidArgument, "RoPE base must be positive");
  if (s.sliding_window < 0) fail(ErrorKind::InvalidArgument, "sliding window must not be negative");
  if (s.n_expert < 0 || s.n_expert == 1 || (s.n_expert > 0 && (s.n_expert_used < 1 || s.n_expert_used > s.n_expert)))
    fail(ErrorKind::InvalidArgument, "{} experts with {} used: need 0, or 2 or more with 1 to all of them used",
         s.n_expert, s.n_expert_used);
  if (s.rope_scaling != RopeScaling::None && !(s.rope_factor >= 1.0f))
    fail(ErrorKind::InvalidArgument, "RoPE scaling factor {} must be at least 1", s.rope_factor);
  if (s.rope_scaling != RopeScaling::None && s.orig_ctx() <= 0)
    fail(ErrorKind::InvalidArgument, "RoPE scaling needs an original context of at least 1 token");
}

// The keys of ModelShape::rope_scaling (the tensors are tensor_specs').
template <class Key>
static void write_rope_scaling(gguf::Writer& w, const ModelShape& s, Key key) {
  switch (s.rope_scaling) {
    case RopeScaling::None:
    case RopeScaling::Llama3: return;  // Llama 3.1: rope_freqs.weight says it all
    case RopeScaling::Yarn:
      w.set_string(key("rope.scaling.type"), "yarn");
      w.set_f32(key("rope.scaling.factor"), s.rope_factor);
      break;
    case RopeScaling::LongRope: {  // phi3's converter: attn_factor sqrt(1 + ln(scale) / ln(orig))
      const double scale = static_cast<double>(s.n_ctx) / s.orig_ctx();
      const double attn = scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(s.orig_ctx()))) : 1.0;
      w.set_f32(key("rope.scaling.attn_factor"), static_cast<float>(attn));
      break;
    }
  }
  w.set_u32(key("rope.scaling.original_context_length"), static_cast<uint32_t>(s.orig_ctx()));
}

void write_hparams(gguf::Writer& w, const ModelShape& s) {
  validate(s);
  const ArchInfo& arch = *s.arch;
  const std::string a = arch.name;
  auto key = [&](const char* k) { return a + "." + k; };
  w.set_string("general.architecture", a);
  w.set_u32(key("context_length"), static_cast<uint32_t>(s.n_ctx));
  w.set_u32(key("embedding_length"), static_cast<uint32_t>(s.n_embd));
  w.set_u32(key("block_count"), static_cast<uint32_t>(s.n_layer));
  w.set_u32(key("feed_forward_length"), static_cast<uint32_t>(s.n_ff));
  w.set_u32(key("attention.head_count"), static_cast<uint32_t>(s.n_head));
  w.set_u32(key("attention.head_count_kv"), static_cast<uint32_t>(s.n_head_kv));
  w.set_f32(key("attention.layer_norm_rms_epsilon"), s.rms_eps);
  w.set_f32(key("rope.freq_base"), s.rope_base);
  if (arch.file.writes_head_size || s.head_size() * s.n_head != s.n_embd) {
    w.set_u32(key("attention.key_length"), static_cast<uint32_t>(s.head_size()));
    w.set_u32(key("attention.value_length"), static_cast<uint32_t>(s.head_size()));
  }
  if (arch.file.writes_rope_dims_and_vocab) {
    w.set_u32(key("rope.dimension_count"), static_cast<uint32_t>(s.head_size()));
    w.set_u32(key("vocab_size"), static_cast<uint32_t>(s.n_vocab));
  }
  if (s.sliding_window > 0) w.set_u32(key("attention.sliding_window"), static_cast<uint32_t>(s.sliding_window));
  write_rope_scaling(w, s, key);
  if (arch.write_family_keys) arch.write_family_keys(w, s);
  if (s.n_expert > 0) {
    w.set_u32(key("expert_count"), static_cast<uint32_t>(s.n_expert));
    w.set_u32(key("expert_used_count"), static_cast<uint32_t>(s.n_expert_used));
  }
  if (s.n_ff_exp > 0) w.set_u32(key("expert_feed_forward_length"), static_cast<uint32_t>(s.n_ff_exp));
  if (s.n_ff_shexp > 0) w.set_u32(key("expert_shared_feed_forward_length"), static_cast<uint32_t>(s.n_ff_shexp));
}

int64_t TensorSpec::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

static int64_t size_of(Dim d, const ModelShape& s) {
  switch (d) {
    case Dim::None: break;
    case Dim::Embd: return s.n_embd;
    case Dim::QRows: return s.n_head * s.head_size();
    case Dim::KvRows: return s.n_head_kv * s.head_size();
    case Dim::Head: return s.head_size();
    case Dim::Ff: return s.n_ff;
    case Dim::QkvRows: return (s.n_head + 2 * s.n_head_kv) * s.head_size();
    case Dim::Ff2: return 2 * s.n_ff;
    case Dim::Expert: return s.n_expert;
    case Dim::FfExp: return s.n_ff_exp;
    case Dim::FfShexp: return s.n_ff_shexp;
    case Dim::Heads: return s.n_head;
  }
  return 0;
}

std::vector<TensorSpec> tensor_specs(const ModelShape& s) {
  validate(s);
  const int64_t e = s.n_embd;
  std::vector<TensorSpec> out;
  out.push_back({"token_embd.weight", {e, s.n_vocab}, TensorRole::TokenEmbedding, -1});
  const int64_t half = s.head_size() / 2;  // rope.dimension_count is the head size
  if (s.rope_scaling == RopeScaling::Llama3) out.push_back({"rope_freqs.weight", {half}, TensorRole::RopeFactors, -1});
  if (s.rope_scaling == RopeScaling::LongRope) {
    out.push_back({"rope_factors_long.weight", {half}, TensorRole::RopeFactors, -1});
    out.push_back({"rope_factors_short.weight", {half}, TensorRole::RopeFactors, -1});
  }
  for (int l = 0; l < s.n_layer; ++l)
    for (const BlockTensor& t : s.arch->file.block) {
      std::vector<int64_t> shape{size_of(t.ne0, s)};
      if (t.ne1 != Dim::None) shape.push_back(size_of(t.ne1, s));
      if (t.ne2 != Dim::None) shape.push_back(size_of(t.ne2, s));
      for (int64_t d : shape)
        if (d <= 0) fail(ErrorKind::InvalidArgument, "{} needs its expert sizes set (tensor {})", s.arch->name, t.name);
      out.push_back({fmt::format("blk.{}.{}", l, t.name), std::move(shape), t.role, l, &t});
    }
  out.push_back({"output_norm.weight", {e}, TensorRole::Norm, -1});
  if (!s.tied_embeddings) out.push_back({"output.weight", {e, s.n_vocab}, TensorRole::Output, -1});
  return out;
}

std::vector<float> rope_factor_values(const TensorSpec& spec, const ModelShape& s) {
  const int64_t half = spec.shape[0];
  std::vector<float> v(static_cast<size_t>(half));
  const double orig = static_cast<double>(s.orig_ctx());
  for (int64_t i = 0; i < half; ++i) {
    const double t = half > 1 ? static_cast<double>(i) / (half - 1) : 0.0;  // 0 .. 1 across the pairs
    if (spec.name == "rope_freqs.weight") {
      // convert_hf_to_gguf's Llama 3 rule: short wavelengths keep their frequency, long ones
      // are divided by the factor, the band between is interpolated smoothly.
      constexpr double kLowFreqFactor = 1.0, kHighFreqFactor = 4.0, kPi = 3.14159265358979323846;
      const float freq = 1.0f / std::pow(s.rope_base, static_cast<float>(2 * i) / static_cast<float>(2 * half));
      const double wavelen = 2.0 * kPi / freq;
      if (wavelen < orig / kHighFreqFactor) {
        v[i] = 1.0f;
      } else if (wavelen > orig / kLowFreqFactor) {
        v[i] = s.rope_factor;
      } else {
        const double smooth = (orig / wavelen - kLowFreqFactor) / (kHighFreqFactor - kLowFreqFactor);
        v[i] = static_cast<float>(1.0 / ((1.0 - smooth) / s.rope_factor + smooth));
      }
    } else if (spec.name == "rope_factors_long.weight") {
      v[i] = static_cast<float>(1.0 + (s.rope_factor - 1.0) * t * t);
    } else {  // rope_factors_short.weight
      v[i] = static_cast<float>(1.0 + 0.25 * t * t);
    }
  }
  return v;
}

}  // namespace ember
