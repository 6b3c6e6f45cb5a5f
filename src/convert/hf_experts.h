// The mixture-of-experts part of a Hugging Face config.json (expert counts and widths), as
// convert_hf_to_gguf reads it, checked against what the family's GGUF can express.
#pragma once
#include <string>

#include "util/json.h"

namespace ember {
struct ArchInfo;
struct ModelShape;
}  // namespace ember

namespace ember::convert {

// Fills s.n_expert, n_expert_used, n_ff_exp and n_ff_shexp from config `c` for a MoE family
// (leaves a dense one alone). Throws Error(Unsupported) naming the setting where the
// checkpoint routes in a way the family's GGUF cannot say (norm_topk_prob against the
// family's fixed renormalisation, dense layers between the sparse ones, clip_qkv).
void read_hf_experts(const ArchInfo& arch, const json::Value& c, ModelShape& s, const std::string& src);

}  // namespace ember::convert
