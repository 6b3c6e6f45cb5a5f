#include "quantize/mix.h"

#include <cstdio>
#include <string>

#include "quantize/encode.h"

namespace ember::quantize {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Block index of "blk.N.<...>", or -1.
int layer_of(std::string_view name) {
  int layer = -1;
  const std::string s(name);
  if (std::sscanf(s.c_str(), "blk.%d.", &layer) != 1) return -1;
  return layer;
}

bool is_float_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

// "<anything>.<one of block_tensors>", as llama.cpp matches tensor names.
bool names_one_of(std::string_view name, std::span<const char* const> block_tensors) {
  for (const char* t : block_tensors)
    if (ends_with(name, std::string(".") + t)) return true;
  return false;
}

}  // namespace

bool more_bits(int layer, int n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

TypePlan::TypePlan(FileType file_type, int n_layer, bool has_output, const std::vector<std::string>& file_order,
                   const QuantRules& rules, int n_expert)
    : ft_(std::move(file_type)), rules_(rules), n_layer_(n_layer), n_expert_(n_expert), has_output_(has_output) {
  int n_attn_v = 0, n_ffn_down = 0;
  for (const std::string& name : file_order) {
    if (is_value(name)) ordinals_[name] = n_attn_v++;
    if (is_down(name)) ordinals_[name] = n_ffn_down++;
  }
}

bool TypePlan::is_value(std::string_view name) const { return names_one_of(name, rules_.value_tensors); }
bool TypePlan::is_down(std::string_view name) const { return names_one_of(name, rules_.down_tensors); }

int TypePlan::ordinal(std::string_view name) const {
  if (n_expert_ > 1 && is_down(name)) return layer_of(name);  // rule 7
  if (auto it = ordinals_.find(name); it != ordinals_.end()) return it->second;
  return layer_of(name);
}

DType TypePlan::type_for(std::string_view name, const std::vector<int64_t>& shape) const {
  if (shape.size() <= 1 || !ends_with(name, ".weight")) return DType::F32;           // rule 1
  if (ends_with(name, "ffn_gate_inp.weight")) return DType::F32;                    // rule 7
  if (ft_.base == DType::MXFP4)                                                      // rule 8
    return fallback_type(shape.size() > 2 && shape[2] > 1 ? DType::MXFP4 : DType::Q8_0, shape[0]);
  if (is_float_type(ft_.base)) return ft_.base;                                      // rule 2
  DType t = ft_.base;
  const bool is_output = name == "output.weight" || (!has_output_ && name == "token_embd.weight");
  const int i = ordinal(name);
  if (is_output) {
    if (t != DType::Q8_0) t = shape[0] % QK_K == 0 ? DType::Q6_K : DType::Q8_0;     // rule 3
  } else if (i >= 0 && is_value(name)) {
    if (ft_.mix && more_bits(i, n_layer_)) t = DType::Q6_K;                           // rule 4
    else if (ft_.name == "Q4_K" && i < 4) t = DType::Q5_K;                            // rule 5
  } else if (i >= 0 && is_down(name)) {
    if (ft_.mix && more_bits(i, n_layer_)) t = DType::Q6_K;                           // rule 4
    else if (ft_.name == "Q4_K" && i < n_layer_ / 8) t = DType::Q5_K;                 // rule 5
  }
  if (n_expert_ == 8) t = expert_rule(name, t);                                      // rule 7
  return fallback_type(t, shape[0]);                                                 // rule 6
}

DType TypePlan::expert_rule(std::string_view name, DType t) const {
  // llama.cpp: "for the 8-expert model, bumping this to Q8_0 trades just ~128MB".
  if (is_value(name) || ends_with(name, ".attn_k.weight")) return DType::Q8_0;
  if (ends_with(name, ".attn_output.weight") && (ft_.name == "Q4_K" || ft_.name == "Q4_K_M")) return DType::Q5_K;
  return t;
}

}  // namespace ember::quantize
