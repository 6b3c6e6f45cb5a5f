// What a GGUF of a family holds, read off its record (arch.h): the <arch>.* keys and the tensors with
// their names and shapes, as llama.cpp's converters write them. `convert` writes its output
// by this list and `synth` generates it.
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
    case Dim::Expert: return s.n_expert;
    case Dim::FfExp: return s.n_ff_exp;
    case Dim::FfShexp: return s.n_ff_shexp;
  }
  return 0;
}

std::vector<TensorSpec> tensor_specs(const ModelShape& s) {
  validate(s);
  const int64_t e = s.n_embd;
  std::vector<TensorSpec> out;
  out.push_back({"token_embd.weight", {e, s.n_vocab}, TensorRole::TokenEmbedding, -1});
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

}  // namespace ember
