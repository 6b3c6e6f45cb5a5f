// Checked CUDA calls: EMBER_CUDA_CHECK(cudaMalloc(...)) throws ember::Error naming the call,
// the file and line and CUDA's own message, so a GPU failure is one clear line like any other.
// Host-only header (plain C++ may include it; kernels live in .cu files).
#pragma once
#include <cuda_runtime_api.h>

namespace ember::cuda {

// Throws Error: OutOfMemory for allocation failures, Unsupported when there is no usable
// device/driver or no kernel image for this GPU, Internal otherwise.
[[noreturn]] void fail_cuda(cudaError_t err, const char* call, const char* file, int line);

}  // namespace ember::cuda

#define EMBER_CUDA_CHECK(call)                                                      \
  do {                                                                              \
    const cudaError_t ember_cuda_err_ = (call);                                     \
    if (ember_cuda_err_ != cudaSuccess)                                             \
      ::ember::cuda::fail_cuda(ember_cuda_err_, #call, __FILE__, __LINE__);         \
  } while (0)

// After a kernel launch: reports bad launch configurations (the launch itself is async).
#define EMBER_CUDA_CHECK_LAUNCH() EMBER_CUDA_CHECK(cudaGetLastError())
