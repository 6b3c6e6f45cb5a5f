// ember's CPU execution of CUDA kernels: include this instead of CUDA's device headers to
// compile a kernel's own source as plain C++, then run it with cpu_exec::launch (launch.h).
// Kernel headers do not include it directly: cuda/kernels/device.cuh picks nvcc's
// vocabulary or this one. Tested on its own by tests/test_cuda_cpu_exec.cpp.
//
// What is emulated:
//   - __global__/__device__/__host__/__forceinline__/__launch_bounds__/__align__;
//     threadIdx, blockIdx, blockDim, gridDim; warpSize 32; the vector types (builtins.h).
//   - Every GPU thread is a fiber; a block's fibers run on one OS thread, switching only at
//     __syncthreads and warp collectives, and blocks run one after another. Barriers count
//     arrivals: a thread that returns, skips or reaches another __syncthreads while others
//     wait fails the launch with Error(Internal) naming block, thread and source lines, as
//     does a deadlock (block.h). Order::Shuffled resumes threads (and blocks) in a seeded
//     random order, so a missing barrier shows as a wrong result.
//   - __syncwarp, __shfl{,_up,_down,_xor}_sync with width, __ballot/__any/__all_sync, each a
//     rendezvous of the lanes in its mask, checked for divergence (collectives.h).
//   - __shared__ (static) is a function-static thread_local: one copy per OS thread, which is
//     per block because blocks run one after another. It is NOT poisoned between blocks (a
//     block sees the previous block's values, zeros at first): C++ gives no hook to find
//     such variables. Dynamic shared memory, EMBER_DYNAMIC_SHARED(T, name) in place of
//     `extern __shared__ T name[]`, is filled with 0xff bytes before every block.
//   - __half/__nv_bfloat16 with their conversions (half.h); math, bit, __dp4a, __ldg, fence
//     and atomic intrinsics (intrinsics.h).
// What is not: inline PTX and tensor-core instructions (mma/wmma: a kernel keeps a portable
// path with the same fragment layout for this), textures, cooperative groups, grid-wide
// sync, dynamic parallelism, streams (a launch is synchronous), __activemask, and the
// interleaving of threads *within* a segment between two synchronisations: a non-atomic
// read-modify-write race on shared memory is not exposed, only ordering races are.
// Fast-math intrinsics are exact here. On failure the other fibers of the block are dropped
// without unwinding, so kernels must not own resources (they never do on the GPU).
#pragma once

#include "cuda/cpu_exec/builtins.h"
#include "cuda/cpu_exec/collectives.h"
#include "cuda/cpu_exec/half.h"
#include "cuda/cpu_exec/intrinsics.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static thread_local
#define __constant__

namespace ember::cpu_exec {
template <class T>
T* dynamic_shared() {
  static_assert(alignof(T) <= alignof(std::max_align_t), "dynamic shared memory is max_align_t aligned");
  return reinterpret_cast<T*>(dynamic_shared_base);
}
}  // namespace ember::cpu_exec

#define EMBER_DYNAMIC_SHARED(T, name) T* name = ::ember::cpu_exec::dynamic_shared<T>()
