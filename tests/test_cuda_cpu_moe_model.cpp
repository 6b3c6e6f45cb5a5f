// Mixture-of-experts models on the CUDA backend, its kernels' own source run on the CPU
// (DeviceKind::CudaOnCpu): qwen3moe (softmax, renormalised top-k), qwen2moe (shared
// expert with a sigmoid gate), olmoe and gpt-oss (MXFP4 experts with biases, sinks) give
// the CPU backend's logits, prompt and decode alike (the
// decode steps captured and replayed as CUDA graphs); a sequence's logits are bitwise the
// same decoded alone (the one-token expert path) and batched with another (the grouped
// path); -ngl places MoE layers on the device like any other; replayed graphs give the
// direct launches' logits.
#include <doctest/doctest.h>

#include <cstring>

#include "backend_check.h"
#include "models/cuda_model_check.h"
#include "models/scheduler_support.h"
#include "moe_models.h"

using namespace ember;
using namespace ember::test;

namespace {

// A prompt of 10 tokens in one batch, then 3 decode steps: every row's logits.
std::vector<float> prompt_and_decode(const Model& model) {
  ThreadPool pool(1);
  ContextOptions o;
  o.n_ctx = 64;
  Context ctx(model, quiet(o), pool);
  const std::vector<int32_t> tokens = prompt_of(13, 5);
  auto all = run_batch(ctx, tokens, 0, 10);
  const auto steps = run_one_by_one(ctx, tokens, 10, 13);
  all.insert(all.end(), steps.begin(), steps.end());
  return all;
}

void check_moe_on_cuda_cpu(const std::string& arch, const std::string& type, double max_nmse) {
  const std::string path = tiny_moe_model(arch, type);
  const auto cpu = prompt_and_decode(*Model::load(path, quiet_load()));
  const auto model = Model::load(path, on_cuda_cpu());
  REQUIRE(model->device() == DeviceKind::CudaOnCpu);
  CHECK(model->device_weight_bytes() == model->weight_bytes());  // each tensor once, experts included
  const auto gpu = prompt_and_decode(*model);
  REQUIRE(gpu.size() == cpu.size());
  const double e = check::nmse(gpu, cpu);
  MESSAGE(arch << " " << type << ": NMSE of the CUDA backend's logits against the CPU backend's: " << e);
  CHECK(e <= max_nmse);
}

}  // namespace

// Both backends quantise the activations to 8 bits for quantised experts, in different
// blocks (as the dense families' checks).
TEST_CASE("cuda on cpu: qwen3moe") { check_moe_on_cuda_cpu("qwen3moe", "q8_0", 1e-3); }
TEST_CASE("cuda on cpu: qwen2moe (shared expert, sigmoid gate)") { check_moe_on_cuda_cpu("qwen2moe", "q4_k_m", 1e-3); }
TEST_CASE("cuda on cpu: olmoe (full-row q/k norms, no renormalisation)") { check_moe_on_cuda_cpu("olmoe", "q8_0", 1e-3); }
// gpt-oss: MXFP4 experts with biases (add_id), router bias, top-k then softmax, the clamped
// SwiGLU, attention sinks and a window on even layers.
TEST_CASE("cuda on cpu: gpt-oss (mxfp4_moe)") { check_moe_on_cuda_cpu("gpt-oss", "mxfp4_moe", 1e-3); }

TEST_CASE("cuda on cpu: a MoE sequence's logits are bitwise the same alone and batched") {
  auto model = Model::load(tiny_moe_model("qwen2moe", "q4_k_m"), on_cuda_cpu());
  ThreadPool pool(1);
  ContextOptions o;
  o.n_ctx = 64;
  o.n_seq = 2;
  const std::vector<int32_t> a = prompt_of(7, 1), b = prompt_of(6, 2);
  const int32_t next_a = 42, next_b = 77;
  std::vector<float> alone, alone_step;
  {
    Context ctx(*model, quiet(o), pool);
    alone = run_batch(ctx, a, 0, a.size(), 0);  // the grouped path: 7 tokens
    Batch one;
    one.add(next_a, -1, 0, true);  // the one-token path
    const auto step = ctx.decode(one);
    alone_step.assign(step.begin(), step.end());
  }
  Context ctx(*model, quiet(o), pool);
  Batch mixed;  // a's and b's prompts interleaved in one batch
  for (size_t i = 0; i < a.size(); ++i) {
    mixed.add(a[i], -1, 0, true);
    if (i < b.size()) mixed.add(b[i], -1, 1, false);
  }
  const std::vector<float> out = [&] {
    const auto o = ctx.decode(mixed);
    return std::vector<float>(o.begin(), o.end());
  }();
  REQUIRE(out.size() == alone.size());
  CHECK(std::memcmp(out.data(), alone.data(), out.size() * sizeof(float)) == 0);
  Batch two;
  two.add(next_a, -1, 0, true);
  two.add(next_b, -1, 1, true);
  const std::vector<float> both = [&] {
    const auto o = ctx.decode(two);
    return std::vector<float>(o.begin(), o.end());
  }();
  REQUIRE(both.size() == 2 * alone_step.size());
  CHECK(std::memcmp(both.data(), alone_step.data(), alone_step.size() * sizeof(float)) == 0);
}

TEST_CASE("cuda on cpu: MoE layers go on the device by default and by -ngl N") {
  const std::string path = tiny_moe_model("qwen3moe", "q8_0");
  LoadOptions o = on_cuda_cpu();
  o.gpu_layers = -1;
  CHECK(Model::load(path, o)->device() == DeviceKind::CudaOnCpu);
  o.gpu_layers = 1;  // layer 0 on the CPU, layer 1 on the device
  const auto split = Model::load(path, o);
  CHECK(split->placement().split());
  const auto cpu = prompt_and_decode(*Model::load(path, quiet_load()));
  const double e = check::nmse(prompt_and_decode(*split), cpu);
  MESSAGE("qwen3moe q8_0 split: NMSE against the CPU backend: " << e);
  CHECK(e <= 1e-3);
}

// Decode steps replayed as CUDA graphs: the routing and the expert matmuls read their ids
// from device memory, so the replayed steps give the logits of steps launched op by op.
TEST_CASE("cuda on cpu: MoE decode steps replay as CUDA graphs with the direct logits") {
  const auto model = Model::load(tiny_moe_model("qwen3moe", "q8_0"), on_cuda_cpu());
  setenv("EMBER_CUDA_GRAPHS", "0", 1);
  const std::vector<float> direct = prompt_and_decode(*model);
  unsetenv("EMBER_CUDA_GRAPHS");
  const cuda::GraphCounts before = cuda::graph_counts();
  const std::vector<float> graphs = prompt_and_decode(*model);
  const cuda::GraphCounts after = cuda::graph_counts();
  CHECK(after.captured - before.captured == 1);  // 3 decode steps: run, captured, replayed
  CHECK(after.replayed - before.replayed == 1);
  CHECK(graphs == direct);
}
