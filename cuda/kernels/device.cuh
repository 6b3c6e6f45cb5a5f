// The first include of every kernel header in cuda/kernels/: nvcc's device vocabulary when
// nvcc compiles the launcher (.cu), ember's CPU execution of it otherwise
// (cuda/cpu_exec/cuda_compat.h), so the tests run the kernels' own source on the CPU.
// Also the one spelling of dynamic shared memory that both understand.
#pragma once

#if defined(__CUDACC__)
#include <cuda_runtime.h>

#define EMBER_DYNAMIC_SHARED(T, name)                                    \
  extern __shared__ __align__(16) unsigned char ember_dynamic_shared_[]; \
  T* name = reinterpret_cast<T*>(ember_dynamic_shared_)
#else
#include "cuda/cpu_exec/cuda_compat.h"
#endif
