// Models for the speculative decoding tests, made once per test binary in a temp dir:
//   target  aidreams260K (llama2.c checkpoint converted to f32 GGUF, vocab 512)
//   q8      its q8_0 quantization: a draft that agrees with the target almost always
//   q4      its q4_0 quantization: agrees often, differs visibly in its probabilities
//   noise   a synth llama with aidreams' vocabulary and another seed: agrees rarely
//   gqa     a synth llama with 4 query heads per KV head (attention batching check)
#pragma once
#include <memory>
#include <string>

#include "util/thread_pool.h"
#include "convert/llama2c.h"
#include "convert_test_util.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "quantize/quantize_file.h"
#include "synth/synth.h"
#include "tokenizer/tokenizer.h"

namespace ember::test {

struct SpecModels {
  TempDir dir{"spec"};
  std::string target_path, q8_path, q4_path, noise_path, gqa_path;
  std::unique_ptr<Model> target, q8, q4, noise, gqa;
  std::unique_ptr<Tokenizer> tok;

  SpecModels() {
    ThreadPool pool(2);
    target_path = dir.file("aidreams.gguf");
    convert::convert_llama2c(shared_path("models/aidreams260K.bin"), shared_path("models/tok512.bin"), target_path,
                             DType::F32, &pool);
    q8_path = dir.file("aidreams-q8_0.gguf");
    quantize::quantize_file(target_path, q8_path, quantize::parse_file_type("q8_0"), &pool);
    q4_path = dir.file("aidreams-q4_0.gguf");
    quantize::quantize_file(target_path, q4_path, quantize::parse_file_type("q4_0"), &pool);
    noise_path = dir.file("noise.gguf");
    gqa_path = dir.file("gqa.gguf");
    synth_small(noise_path, 64, 4, 4, 11, &pool);
    synth_small(gqa_path, 128, 8, 2, 12, &pool);
    target = Model::load(target_path, {.print_plan = false});
    q8 = Model::load(q8_path, {.print_plan = false});
    q4 = Model::load(q4_path, {.print_plan = false});
    noise = Model::load(noise_path, {.print_plan = false});
    gqa = Model::load(gqa_path, {.print_plan = false});
    tok = std::make_unique<Tokenizer>(Tokenizer::from_gguf(target->gguf()));
  }

  void synth_small(const std::string& out, int dim, int heads, int kv_heads, uint64_t seed, ThreadPool* pool) {
    synth::SynthOptions o;
    o.shape = synth::default_shape(require_arch("llama"));
    o.shape.n_embd = dim;
    o.shape.n_layer = 2;
    o.shape.n_head = heads;
    o.shape.n_head_kv = kv_heads;
    o.shape.head_dim = 16;
    o.shape.n_ff = 128;
    o.shape.n_ctx = 512;
    o.shape.tied_embeddings = true;
    o.vocab_path = target_path;  // same 512-token vocabulary as the target
    o.type = quantize::parse_file_type("f32");
    o.seed = seed;
    synth::synth_model(o, out, pool);
  }
};

inline SpecModels& spec_models() {
  static SpecModels models;
  return models;
}

inline ContextOptions spec_ctx(int n_ctx = 256) {
  ContextOptions o;
  o.n_ctx = n_ctx;
  o.n_ubatch = 64;
  o.print_plan = false;
  return o;
}

}  // namespace ember::test
