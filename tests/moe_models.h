// Tiny mixture-of-experts models written by `synth` at test time (no committed files): each
// MoE family at 2 layers, width 256, 8 experts of which 2 used (qwen2moe with its shared
// expert; gpt-oss untied, window 16), in the type asked for. Made once per process and type.
#pragma once
#include <map>
#include <string>

#include "convert_test_util.h"
#include "model/arch.h"
#include "synth/synth.h"
#include "util/thread_pool.h"

namespace ember::test {

inline const char* const kMoeArchs[] = {"qwen3moe", "qwen2moe", "mixtral", "olmoe"};

inline synth::SynthOptions tiny_moe_options(const std::string& arch, const std::string& type) {
  synth::SynthOptions o;
  o.shape = synth::default_shape(require_arch(arch));
  o.shape.n_embd = 256;  // rows whole k-quant blocks: the file's types are the Q4_K_M rules'
  o.shape.n_layer = 2;
  o.shape.n_head = 4;
  o.shape.n_head_kv = arch == "olmoe" ? 4 : 2;  // olmoe's k norm spans n_embd
  o.shape.n_ff = 512;
  o.shape.n_ctx = 512;
  o.shape.n_expert = 8;
  o.shape.n_expert_used = 2;
  if (o.shape.n_ff_exp) o.shape.n_ff_exp = 256;
  if (o.shape.n_ff_shexp) o.shape.n_ff_shexp = 256;
  o.shape.tied_embeddings = true;  // half the 32000-row work
  if (arch == "gpt-oss") {
    o.shape.tied_embeddings = false;  // llama.cpp requires its output.weight
    o.shape.sliding_window = 16;      // tokens: the even layer's window bites in short prompts
  }
  o.vocab_path = shared_path("vocab/ggml-vocab-llama-spm.gguf");
  o.type = quantize::parse_file_type(type);
  o.seed = 29;
  return o;
}

inline std::string tiny_moe_model(const std::string& arch, const std::string& type = "q4_k_m") {
  static TempDir dir("moe-models");
  static std::map<std::string, std::string> made;
  const std::string key = arch + "-" + type;
  if (auto it = made.find(key); it != made.end()) return it->second;
  const std::string out = dir.file(key + ".gguf");
  ThreadPool pool(2);
  synth::synth_model(tiny_moe_options(arch, type), out, &pool);
  return made[key] = out;
}

}  // namespace ember::test
