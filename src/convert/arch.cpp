#include "convert/arch.h"

#include <fmt/format.h>

#include "gguf/gguf_writer.h"
#include "util/error.h"

namespace ember::convert {

const char* arch_name(Arch arch) {
  switch (arch) {
    case Arch::Llama: return "llama";
    case Arch::Qwen2: return "qwen2";
    case Arch::Qwen3: return "qwen3";
    case Arch::Gemma3: return "gemma3";
  }
  return "unknown";
}

Arch parse_arch(std::string_view name) {
  for (Arch a : {Arch::Llama, Arch::Qwen2, Arch::Qwen3, Arch::Gemma3})
    if (name == arch_name(a)) return a;
  fail(ErrorKind::Unsupported, "architecture '{}' is not supported (llama, qwen2, qwen3, gemma3)", name);
}

void validate(const HParams& hp) {
  const std::pair<const char*, int64_t> positive[] = {
      {"vocabulary size", hp.n_vocab}, {"embedding length", hp.n_embd},
      {"feed-forward length", hp.n_ff}, {"block count", hp.n_layer},
      {"head count", hp.n_head}, {"kv head count", hp.n_head_kv},
      {"context length", hp.n_ctx}};
  for (const auto& [what, v] : positive)
    if (v <= 0) fail(ErrorKind::InvalidArgument, "{} must be positive, got {}", what, v);
  if (hp.head_dim < 0) fail(ErrorKind::InvalidArgument, "head size must be positive, got {}", hp.head_dim);
  if (hp.head_dim == 0 && hp.n_embd % hp.n_head != 0)
    fail(ErrorKind::InvalidArgument, "embedding length {} is not a multiple of the head count {}",
         hp.n_embd, hp.n_head);
  if (hp.n_head % hp.n_head_kv != 0)
    fail(ErrorKind::InvalidArgument, "head count {} is not a multiple of the kv head count {}",
         hp.n_head, hp.n_head_kv);
  if (hp.head_size() % 2 != 0)
    fail(ErrorKind::InvalidArgument, "head size {} must be even for RoPE", hp.head_size());
  if (!(hp.rms_eps > 0)) fail(ErrorKind::InvalidArgument, "RMSNorm epsilon must be positive");
  if (!(hp.rope_base > 0)) fail(ErrorKind::InvalidArgument, "RoPE base must be positive");
  if (hp.sliding_window < 0) fail(ErrorKind::InvalidArgument, "sliding window must not be negative");
}

void write_hparams(gguf::Writer& w, const HParams& hp) {
  validate(hp);
  const std::string a = arch_name(hp.arch);
  auto key = [&](const char* k) { return a + "." + k; };
  w.set_string("general.architecture", a);
  w.set_u32(key("context_length"), static_cast<uint32_t>(hp.n_ctx));
  w.set_u32(key("embedding_length"), static_cast<uint32_t>(hp.n_embd));
  w.set_u32(key("block_count"), static_cast<uint32_t>(hp.n_layer));
  w.set_u32(key("feed_forward_length"), static_cast<uint32_t>(hp.n_ff));
  w.set_u32(key("attention.head_count"), static_cast<uint32_t>(hp.n_head));
  w.set_u32(key("attention.head_count_kv"), static_cast<uint32_t>(hp.n_head_kv));
  w.set_f32(key("attention.layer_norm_rms_epsilon"), hp.rms_eps);
  w.set_f32(key("rope.freq_base"), hp.rope_base);
  // llama.cpp derives the head size from n_embd / n_head unless key_length says otherwise;
  // qwen3 and gemma3 heads are not that quotient in general, so their converters always
  // write it.
  const bool explicit_head = hp.arch == Arch::Qwen3 || hp.arch == Arch::Gemma3 ||
                             hp.head_size() * hp.n_head != hp.n_embd;
  if (explicit_head) {
    w.set_u32(key("attention.key_length"), static_cast<uint32_t>(hp.head_size()));
    w.set_u32(key("attention.value_length"), static_cast<uint32_t>(hp.head_size()));
  }
  if (hp.arch == Arch::Llama) {
    w.set_u32(key("rope.dimension_count"), static_cast<uint32_t>(hp.head_size()));
    w.set_u32(key("vocab_size"), static_cast<uint32_t>(hp.n_vocab));
  }
  if (hp.arch == Arch::Gemma3 && hp.sliding_window > 0)
    w.set_u32(key("attention.sliding_window"), static_cast<uint32_t>(hp.sliding_window));
}

int64_t TensorSpec::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<TensorSpec> tensor_specs(const HParams& hp) {
  validate(hp);
  const int64_t e = hp.n_embd, hd = hp.head_size();
  const int64_t q_dim = hp.n_head * hd, kv_dim = hp.n_head_kv * hd;
  std::vector<TensorSpec> out;
  auto add = [&](std::string name, std::vector<int64_t> shape, TensorRole role, int layer) {
    out.push_back({std::move(name), std::move(shape), role, layer});
  };
  add("token_embd.weight", {e, hp.n_vocab}, TensorRole::TokenEmbedding, -1);
  for (int l = 0; l < hp.n_layer; ++l) {
    auto n = [&](const char* what) { return fmt::format("blk.{}.{}", l, what); };
    add(n("attn_norm.weight"), {e}, TensorRole::Norm, l);
    add(n("attn_q.weight"), {e, q_dim}, TensorRole::AttnQ, l);
    add(n("attn_k.weight"), {e, kv_dim}, TensorRole::AttnK, l);
    add(n("attn_v.weight"), {e, kv_dim}, TensorRole::AttnV, l);
    if (hp.arch == Arch::Qwen2) {
      add(n("attn_q.bias"), {q_dim}, TensorRole::Bias, l);
      add(n("attn_k.bias"), {kv_dim}, TensorRole::Bias, l);
      add(n("attn_v.bias"), {kv_dim}, TensorRole::Bias, l);
    }
    if (hp.arch == Arch::Qwen3 || hp.arch == Arch::Gemma3) {
      add(n("attn_q_norm.weight"), {hd}, TensorRole::Norm, l);
      add(n("attn_k_norm.weight"), {hd}, TensorRole::Norm, l);
    }
    add(n("attn_output.weight"), {q_dim, e}, TensorRole::AttnOutput, l);
    if (hp.arch == Arch::Gemma3) add(n("post_attention_norm.weight"), {e}, TensorRole::Norm, l);
    add(n("ffn_norm.weight"), {e}, TensorRole::Norm, l);
    add(n("ffn_gate.weight"), {e, hp.n_ff}, TensorRole::FfnGate, l);
    add(n("ffn_up.weight"), {e, hp.n_ff}, TensorRole::FfnUp, l);
    add(n("ffn_down.weight"), {hp.n_ff, e}, TensorRole::FfnDown, l);
    if (hp.arch == Arch::Gemma3) add(n("post_ffw_norm.weight"), {e}, TensorRole::Norm, l);
  }
  add("output_norm.weight", {e}, TensorRole::Norm, -1);
  if (!hp.tied_embeddings) add("output.weight", {e, hp.n_vocab}, TensorRole::Output, -1);
  return out;
}

}  // namespace ember::convert
