// The first include of every kernel header in cuda/kernels/: nvcc's device vocabulary when
// nvcc compiles the launcher (.cu), ember's CPU execution of it otherwise
// (cuda/cpu_exec/cuda_compat.h), so the tests run the kernels' own source on the CPU.
// Also the one spelling of dynamic shared memory and of a launch that both understand:
//   EMBER_LAUNCH(kernel, grid, block, shared_bytes, stream, args...)
// is kernel<<<grid, block, shared_bytes, stream>>>(args...) checked for launch errors under
// nvcc, and cpu_exec::launch_on otherwise (synchronous, or recorded while the stream captures).
#pragma once

#if defined(__CUDACC__)
#include <cuda_runtime.h>

#include "cuda/check.h"

#define EMBER_DYNAMIC_SHARED(T, name)                                    \
  extern __shared__ __align__(16) unsigned char ember_dynamic_shared_[]; \
  T* name = reinterpret_cast<T*>(ember_dynamic_shared_)

#define EMBER_LAUNCH(kernel, grid, block, shared_bytes, stream, ...)                                   \
  do {                                                                                                 \
    kernel<<<(grid), (block), (shared_bytes), static_cast<cudaStream_t>(stream)>>>(__VA_ARGS__);      \
    EMBER_CUDA_CHECK_LAUNCH();                                                                         \
  } while (0)
#else
#include "cuda/cpu_exec/capture.h"
#include "cuda/cpu_exec/cuda_compat.h"

#define EMBER_LAUNCH(kernel, grid, block, shared_bytes, stream, ...) \
  ::ember::cpu_exec::launch_on((stream), (grid), (block), (shared_bytes), kernel, __VA_ARGS__)
#endif
