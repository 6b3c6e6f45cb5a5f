// Issue 29's families and RoPE variants through the CUDA backend, its kernels' own source run
// on the CPU (DeviceKind::CudaOnCpu): Llama 3 frequency factors, YaRN, gemma2 (sliding window
// on alternate layers, soft-caps) and phi3 (fused tensors split at load, LongRoPE's long
// factors) give the CPU backend's logits, prompt and decode alike, also with a Q8_0 file.
#include <doctest/doctest.h>

#include "backend_check.h"
#include "models/cuda_model_check.h"
#include "models/synth_family.h"

using namespace ember;
using namespace ember::test;

namespace {

// A prompt of 10 tokens in one batch, then 3 decode steps: every row's logits.
std::vector<float> prompt_and_decode(const Model& model) {
  ThreadPool pool(1);
  ContextOptions o;
  o.n_ctx = 64;  // phi3: beyond its original 32, the long factors
  Context ctx(model, quiet(o), pool);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 13; ++i) tokens.push_back(1 + (53 * i + 7) % 900);
  auto all = run_batch(ctx, tokens, 0, 10);
  const auto steps = run_one_by_one(ctx, tokens, 10, 13);
  all.insert(all.end(), steps.begin(), steps.end());
  return all;
}

void check_family_on_cuda_cpu(const std::string& name, const char* type, double max_nmse,
                              const LoadOptions& load = on_cuda_cpu()) {
  TempDir dir("cuda-families");
  const std::string path = synth_family(dir, name, type);
  const auto cpu = prompt_and_decode(*Model::load(path, quiet_load()));
  const auto model = Model::load(path, load);
  REQUIRE(model->device() == DeviceKind::CudaOnCpu);
  if (!model->placement().split()) CHECK(model->device_weight_bytes() == model->weight_bytes());  // each tensor once
  const auto gpu = prompt_and_decode(*model);
  REQUIRE(gpu.size() == cpu.size());
  const double e = check::nmse(gpu, cpu);
  MESSAGE(name << " " << std::string(type) << ": NMSE of the CUDA backend's logits against the CPU backend's: " << e);
  CHECK(e <= max_nmse);
}

}  // namespace

// f32 weights: the two backends differ by summation order only (as check_against_cpu).
TEST_CASE("cuda on cpu: llama with Llama 3 rope_freqs") { check_family_on_cuda_cpu("llama3", "f32", 1e-8); }
TEST_CASE("cuda on cpu: llama with YaRN") { check_family_on_cuda_cpu("yarn", "f32", 1e-8); }
TEST_CASE("cuda on cpu: gemma2") { check_family_on_cuda_cpu("gemma2", "f32", 1e-8); }
TEST_CASE("cuda on cpu: phi3 with LongRoPE") { check_family_on_cuda_cpu("phi3", "f32", 1e-8); }
// Quantised weights: both quantise the activations to 8 bits, in different blocks.
TEST_CASE("cuda on cpu: phi3 Q8_0 (fused tensors split into quantised row ranges)") {
  check_family_on_cuda_cpu("phi3", "q8_0", 1e-3);
}
// Split: layer 0 on the CPU, layer 1 on the device; each reads the RoPE factors from its own
// memory (rope_freqs.weight is bound once per layer's device).
TEST_CASE("cuda on cpu: llama3 split between the CPU and the device (-ngl 1)") {
  LoadOptions split = on_cuda_cpu();
  split.gpu_layers = 1;
  check_family_on_cuda_cpu("llama3", "f32", 1e-8, split);
}
