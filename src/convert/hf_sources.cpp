#include "convert/hf_sources.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "model/arch.h"
#include "util/error.h"

namespace ember::convert {

HfTensors open_tensors(const std::string& dir) {
  HfTensors t{SafetensorsModel::open(dir), "", nullptr, nullptr};
  for (const char* p : {"model.", "language_model.model.", "model.language_model."})
    if (t.st.find(std::string(p) + "embed_tokens.weight")) t.prefix = p;
  if (t.prefix.empty()) fail(ErrorKind::Format, "{}: no embed_tokens.weight tensor", dir);
  t.embed = t.st.find(t.prefix + "embed_tokens.weight");
  if (t.embed->shape.size() != 2) fail(ErrorKind::Format, "{}: embed_tokens.weight is not 2-D", dir);
  for (const char* p : {"lm_head.weight", "language_model.lm_head.weight"})
    if (!t.lm_head) t.lm_head = t.st.find(p);
  return t;
}

namespace {

// transformers v5's fused experts (its newer releases, and checkpoints saved with
// save_original_format=False): per layer one gate_up_proj [n_expert, 2 n_ff, n_embd], the
// gate's rows first, and one down_proj [n_expert, n_embd, n_ff], in place of these
// per-expert tensors (convert_hf_to_gguf reads the same for qwen2moe and qwen3moe).
struct FusedExperts {
  const char* per_expert;  // a BlockTensor's hf_name
  const char* fused;
  int part;                // which of the fused tensor's `parts` equal row blocks
  int parts;
};
constexpr FusedExperts kFused[] = {{"mlp.experts.{}.gate_proj.weight", "mlp.experts.gate_up_proj", 0, 2},
                                   {"mlp.experts.{}.up_proj.weight", "mlp.experts.gate_up_proj", 1, 2},
                                   {"mlp.experts.{}.down_proj.weight", "mlp.experts.down_proj", 0, 1}};

std::string block_name(const TensorSpec& spec, const HfTensors& t, const std::string& within) {
  return fmt::format("{}layers.{}.{}", t.prefix, spec.layer, within);
}

void check_dtype(const SafeTensor& st, const std::string& dir) {
  if (st.dtype != "F32" && st.dtype != "F16" && st.dtype != "BF16")
    fail(ErrorKind::Unsupported, "{}: tensor {} has dtype {}; only F32, F16 and BF16 convert", dir, st.name, st.dtype);
}

const SafeTensor& checked(const std::string& hf, const std::vector<int64_t>& want, const std::string& gguf_name,
                          const HfTensors& t, const std::string& dir) {
  const SafeTensor* st = t.st.find(hf);
  if (!st) fail(ErrorKind::Format, "{}: tensor {} (for {}) is missing", dir, hf, gguf_name);
  // A vector may come as a [1, n] Linear weight (qwen2moe's shared_expert_gate).
  const bool row_of_one = want.size() == 1 && st->shape == std::vector<int64_t>{1, want[0]};
  if (st->shape != want && !row_of_one)
    fail(ErrorKind::Format, "{}: tensor {} has shape [{}], {} expects [{}]", dir, hf, fmt::join(st->shape, ", "),
         gguf_name, fmt::join(want, ", "));
  check_dtype(*st, dir);
  return *st;
}

// The fused tensor holding expert tensor `spec`'s rows, or an empty RowSources.
RowSources fused_source(const TensorSpec& spec, const HfTensors& t, const std::string& dir) {
  for (const FusedExperts& f : kFused) {
    if (std::strcmp(f.per_expert, spec.block->hf_name) != 0) continue;
    const SafeTensor* st = t.st.find(block_name(spec, t, f.fused));
    if (!st) st = t.st.find(block_name(spec, t, std::string(f.fused) + ".weight"));
    if (!st) return {};
    const std::vector<int64_t> want{spec.shape[2], f.parts * spec.shape[1], spec.shape[0]};
    if (st->shape != want)
      fail(ErrorKind::Format, "{}: tensor {} has shape [{}], {} expects [{}]", dir, st->name, fmt::join(st->shape, ", "),
           spec.name, fmt::join(want, ", "));
    check_dtype(*st, dir);
    return {{st}, f.parts * spec.shape[1], f.part * spec.shape[1]};
  }
  return {};
}

}  // namespace

RowSources sources_of(const TensorSpec& spec, const HfTensors& t, const std::string& dir) {
  const bool experts = spec.block && spec.block->ne2 == Dim::Expert;
  const size_t dims = experts ? 2 : spec.shape.size();
  const std::vector<int64_t> want(spec.shape.rend() - static_cast<std::ptrdiff_t>(dims), spec.shape.rend());  // PyTorch order
  if (spec.name == "token_embd.weight") return {{&checked(t.prefix + "embed_tokens.weight", want, spec.name, t, dir)}};
  if (spec.name == "output_norm.weight") return {{&checked(t.prefix + "norm.weight", want, spec.name, t, dir)}};
  if (spec.name == "output.weight") return {{&checked(t.lm_head->name, want, spec.name, t, dir)}};
  const char* name = spec.block->hf_name;
  if (!name) fail(ErrorKind::Unsupported, "tensor {} has no Hugging Face counterpart to convert from", spec.name);
  if (!experts) return {{&checked(block_name(spec, t, name), want, spec.name, t, dir)}};
  // Experts: one tensor each ("{}" is the expert's number), or the fused layout.
  const std::string first = block_name(spec, t, fmt::format(fmt::runtime(name), 0));
  if (!t.st.find(first))
    if (RowSources fused = fused_source(spec, t, dir); !fused.tensors.empty()) return fused;
  RowSources out;
  for (int64_t e = 0; e < spec.shape[2]; ++e)
    out.tensors.push_back(&checked(block_name(spec, t, fmt::format(fmt::runtime(name), e)), want, spec.name, t, dir));
  return out;
}

}  // namespace ember::convert
