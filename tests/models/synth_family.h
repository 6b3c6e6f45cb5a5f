// Small synthetic models of the families and RoPE variants of issue 29 (llama with Llama 3
// factors or YaRN, gemma2, phi3 with LongRoPE), written by `synth` into a test's directory.
#pragma once
#include <string>

#include "convert_test_util.h"
#include "model/arch.h"
#include "synth/synth.h"
#include "util/thread_pool.h"

namespace ember::test {

// name: "llama3", "yarn", "gemma2", "phi3" (LongRoPE, original context 32 of 256) or any
// family name (plain).
inline synth::SynthOptions family_options(const std::string& name, const char* type = "f32") {
  const bool phi3 = name == "phi3";
  const std::string arch = name == "llama3" || name == "yarn" ? "llama" : name;
  synth::SynthOptions o;
  o.shape = synth::default_shape(require_arch(arch));
  o.shape.n_embd = 64;
  o.shape.n_layer = 2;
  o.shape.n_head = 4;
  o.shape.n_head_kv = 2;
  o.shape.n_ff = 96;
  o.shape.n_ctx = 256;
  o.shape.tied_embeddings = true;
  if (name == "gemma2") o.shape.sliding_window = 8;
  if (phi3) o.shape.sliding_window = 0;
  if (name == "llama3") o.shape.rope_scaling = RopeScaling::Llama3;
  if (name == "yarn") o.shape.rope_scaling = RopeScaling::Yarn;
  if (phi3) o.shape.rope_scaling = RopeScaling::LongRope;
  o.shape.rope_factor = 8.0f;
  o.shape.rope_orig_ctx = 32;
  o.vocab_path = shared_path(phi3 ? "vocab/ggml-vocab-phi-3.gguf" : "vocab/ggml-vocab-llama-spm.gguf");
  o.type = quantize::parse_file_type(type);
  o.seed = 11;
  return o;
}

// Writes the model `name` into dir and returns its path.
inline std::string synth_family(TempDir& dir, const std::string& name, const char* type = "f32") {
  const std::string path = dir.file(name + "-" + type + ".gguf");
  ThreadPool pool(2);
  synth::synth_model(family_options(name, type), path, &pool);
  return path;
}

}  // namespace ember::test
