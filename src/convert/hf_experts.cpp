#include "convert/hf_experts.h"

#include <initializer_list>

#include "model/arch.h"
#include "model/moe.h"
#include "util/error.h"

namespace ember::convert {

namespace {

// The first of `keys` config.json sets (convert_hf_to_gguf's find_hparam), or `fallback`.
int64_t find_int(const json::Value& c, std::initializer_list<const char*> keys, int64_t fallback,
                 const std::string& src) {
  for (const char* k : keys)
    if (const json::Value* v = json::find(c, k); v && !v->is_null()) return json::as_int(*v, src + ": " + k);
  return fallback;
}

// Routing the family's GGUF has no key for: llama.cpp fixes it per architecture.
void check_fixed_routing(const ArchInfo& arch, const MoeFamily& moe, const json::Value& c, const std::string& src) {
  if (const json::Value* v = json::find(c, "norm_topk_prob"); v && v->is_boolean() && json::as_bool(*v) != moe.norm_weights)
    fail(ErrorKind::Unsupported, "{}: norm_topk_prob is {}, but {} {} the chosen experts' weights (llama.cpp reads no key for it)",
         src, json::as_bool(*v), arch.alias ? arch.alias : arch.name, moe.norm_weights ? "always renormalises" : "never renormalises");
  if (const json::Value* v = json::find(c, "mlp_only_layers"); v && v->is_array() && !json::as_array(*v).empty())
    fail(ErrorKind::Unsupported, "{}: mlp_only_layers (dense layers among the MoE ones) does not convert", src);
  if (find_int(c, {"decoder_sparse_step"}, 1, src) != 1)
    fail(ErrorKind::Unsupported, "{}: decoder_sparse_step other than 1 (dense layers among the MoE ones) does not convert", src);
  if (const json::Value* v = json::find(c, "clip_qkv"); v && !v->is_null())
    fail(ErrorKind::Unsupported, "{}: clip_qkv (clamped q/k/v) does not convert", src);
}

}  // namespace

void read_hf_experts(const ArchInfo& arch, const json::Value& c, ModelShape& s, const std::string& src) {
  if (!arch.moe) return;
  const MoeFamily& moe = *arch.moe;
  s.n_expert = find_int(c, {"num_local_experts", "num_experts"}, 0, src);
  s.n_expert_used = find_int(c, {"num_experts_per_tok"}, 0, src);
  if (s.n_expert < 2 || s.n_expert_used < 1 || s.n_expert_used > s.n_expert)
    fail(ErrorKind::Format, "{}: num_experts {} / num_experts_per_tok {}: need 2 or more experts, 1 to all of them used",
         src, s.n_expert, s.n_expert_used);
  check_fixed_routing(arch, moe, c, src);
  // Widths: llama.cpp's loader falls back to n_ff / used and n_ff where the converter wrote
  // no key; the same values are written here.
  if (moe.width == ExpertWidth::Key)
    s.n_ff_exp = find_int(c, {"moe_intermediate_size"}, s.n_ff / s.n_expert_used, src);
  if (moe.shared_expert) s.n_ff_shexp = find_int(c, {"shared_expert_intermediate_size"}, s.n_ff, src);
}

}  // namespace ember::convert
