// The whole forward pass on the GPU (DeviceKind::Cuda): every tiny family against the numpy
// reference and the CPU backend, as test_cuda_cpu_model.cpp checks the same kernels run on
// the CPU. Reports "skipped" without a CUDA device (tools/gpu-check runs it on one).
#include <doctest/doctest.h>

#include "backend/cuda_api.h"
#include "models/cuda_model_check.h"

using namespace ember;
using namespace ember::test;

namespace {

bool have_gpu() {
  if (cuda::device_count() > 0) return true;
  MESSAGE("skipped: no CUDA device");
  return false;
}

LoadOptions on_gpu() {
  LoadOptions o = quiet_load();
  o.gpu_layers = 1000;
  return o;
}

}  // namespace

TEST_CASE("cuda: every tiny family on the GPU matches the reference and the CPU backend") {
  if (!have_gpu()) return;
  CHECK(Model::load(tiny_model("llama"), on_gpu())->device() == DeviceKind::Cuda);
  check_against_cpu("llama-f32", 1e-5, DType::F32, on_gpu());
  check_against_cpu("llama", 0.03, DType::F16, on_gpu());
  check_against_cpu("llama", 0.03, DType::Q8_0, on_gpu());
  check_against_cpu("llama", 0.03, DType::Q4_0, on_gpu());
  check_against_cpu("qwen2", 0.03, DType::F16, on_gpu());
  check_against_cpu("qwen3", 0.03, DType::F16, on_gpu());
  check_against_cpu("gemma3", 0.03, DType::F16, on_gpu());
}

TEST_CASE("cuda: decode steps replayed as CUDA graphs give the logits of op-by-op launches, bitwise") {
  if (!have_gpu()) return;
  check_graphs_match_direct("llama", 1, 40, on_gpu());
  check_graphs_match_direct("gemma3", 1, 40, on_gpu());
  check_graphs_match_direct("qwen3", 3, 30, on_gpu());
}
