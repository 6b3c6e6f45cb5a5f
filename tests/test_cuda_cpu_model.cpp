// The whole forward pass through the CUDA backend, its kernels' own source run on the CPU
// (DeviceKind::CudaOnCpu, cuda/cpu_exec): every tiny family against the independent numpy
// reference with the CPU backend's tolerances (tests/test_model_golden.cpp), and against the
// CPU backend's logits on the same tokens. A GPU runs the same kernels compiled by nvcc
// (tools/gpu-check).
#include <doctest/doctest.h>

#include <cstdlib>

#include "models/cuda_model_check.h"
#include "util/error.h"

using namespace ember;
using namespace ember::test;

TEST_CASE("cuda on cpu: -ngl places all layers, the last N, or none on the CUDA backend") {
  auto model = Model::load(tiny_model("llama"), on_cuda_cpu());
  CHECK(model->device() == DeviceKind::CudaOnCpu);
  CHECK(model->placement().first_device_layer == 0);
  CHECK(model->device_weight_bytes() == model->weight_bytes());  // every tensor uploaded once
  LoadOptions partial = on_cuda_cpu();
  partial.gpu_layers = 1;
  auto split = Model::load(tiny_model("llama"), partial);
  CHECK(split->placement().first_device_layer == split->hparams().n_layer - 1);
  CHECK(split->device_weight_bytes() > 0);
  CHECK(split->device_weight_bytes() < split->weight_bytes());
  LoadOptions none = on_cuda_cpu();
  none.gpu_layers = 0;
  CHECK(Model::load(tiny_model("llama"), none)->device() == DeviceKind::Cpu);
}

TEST_CASE("cuda on cpu: a model split between the CPU and the device (-ngl 1, 2)") {
  LoadOptions split = on_cuda_cpu();
  split.gpu_layers = 1;
  check_against_cpu("llama", 0.03, DType::F16, split);
  split.gpu_layers = 2;
  check_against_cpu("gemma3", 0.03, DType::Q8_0, split);
}

TEST_CASE("cuda on cpu: llama with f32 weights matches the reference and the CPU backend") {
  check_against_cpu("llama-f32", 1e-5, DType::F32, on_cuda_cpu());
}
TEST_CASE("cuda on cpu: llama") { check_against_cpu("llama", 0.03, DType::F16, on_cuda_cpu()); }
TEST_CASE("cuda on cpu: llama with a q8_0 KV cache") { check_against_cpu("llama", 0.03, DType::Q8_0, on_cuda_cpu()); }
TEST_CASE("cuda on cpu: qwen2") { check_against_cpu("qwen2", 0.03, DType::F16, on_cuda_cpu()); }
TEST_CASE("cuda on cpu: qwen3") { check_against_cpu("qwen3", 0.03, DType::F16, on_cuda_cpu()); }
TEST_CASE("cuda on cpu: gemma3 (sliding window, soft-caps)") { check_against_cpu("gemma3", 0.03, DType::F16, on_cuda_cpu()); }

TEST_CASE("cuda on cpu: two sequences in one batch give each one's logits alone") {
  auto model = Model::load(tiny_model("qwen2"), on_cuda_cpu());
  ThreadPool pool(1);
  ContextOptions o;
  o.n_ctx = 64;
  o.n_seq = 2;
  const int n_vocab = model->hparams().n_vocab;
  std::vector<int32_t> a, b;
  for (int i = 0; i < 13; ++i) a.push_back((7 * i + 3) % n_vocab), b.push_back((11 * i + 5) % n_vocab);
  std::vector<float> alone_a, alone_b;
  {
    Context ctx(*model, quiet(o), pool);
    alone_a = run_batch(ctx, a, 0, a.size(), 0);
    alone_b = run_batch(ctx, b, 0, b.size(), 1);
  }
  Context ctx(*model, quiet(o), pool);
  Batch mixed;  // a's rows, then b's, then the last of each interleaved
  for (size_t i = 0; i + 1 < a.size(); ++i) mixed.add(a[i], -1, 0, true);
  for (size_t i = 0; i + 1 < b.size(); ++i) mixed.add(b[i], -1, 1, true);
  mixed.add(a.back(), -1, 0, true);
  mixed.add(b.back(), -1, 1, true);
  const auto out = ctx.decode(mixed);
  const size_t n = a.size() - 1, row = static_cast<size_t>(n_vocab);
  auto rows_of = [&](size_t first, size_t count) {
    return std::vector<float>(out.begin() + first * row, out.begin() + (first + count) * row);
  };
  std::vector<float> got_a = rows_of(0, n), got_b = rows_of(n, n);
  const std::vector<float> last_a = rows_of(2 * n, 1), last_b = rows_of(2 * n + 1, 1);
  got_a.insert(got_a.end(), last_a.begin(), last_a.end());
  got_b.insert(got_b.end(), last_b.begin(), last_b.end());
  check::expect_close(got_a, alone_a, 1e-10, "sequence 0");
  check::expect_close(got_b, alone_b, 1e-10, "sequence 1");
}
