// The CUDA backend's whole-model check, shared by the CPU execution of its kernels
// (test_cuda_cpu_model.cpp) and the GPU (test_cuda_model.cpp).
#pragma once
#include "backend_check.h"
#include "models/model_support.h"

namespace ember::test {

// A tiny family on the device `load` picks, against the numpy reference (check_family) and
// against the CPU backend's logits for the same tokens.
inline void check_against_cpu(const std::string& arch, double rel_tol, DType kv, const LoadOptions& load) {
  const std::vector<float> cpu = check_family(arch, rel_tol, kv);
  const std::vector<float> gpu = check_family(arch, rel_tol, kv, load);
  const double e = check::nmse(gpu, cpu);
  MESSAGE(arch << ": NMSE of the CUDA backend's logits against the CPU backend's: " << e);
  // Both quantise activations to 8 bits for quantised weights, in different blocks (CUDA:
  // q8_1 with fp16 sums; CPU: its own per-kernel formats), and sum in different orders:
  // measured 4e-5..2.4e-4 on the Q8_0/Q4_0 tiny models. Float weights differ by rounding.
  CHECK(e <= (rel_tol < 1e-3 ? 1e-8 : 1e-3));
}

}  // namespace ember::test
