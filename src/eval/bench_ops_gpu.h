// The GPU tables of `ember bench-ops` (bench_ops_gpu.cpp): the CUDA kernels (cuda/kernel_api.h)
// on a CUDA device, or on the CPU execution of their source (EMBER_CUDA_ON_CPU=1) with tiny
// shapes, which exercises every line of the tables without a GPU (the figures then mean
// nothing).
#pragma once
#include "backend/backend.h"

namespace ember::eval {

// small: tiny shapes and few calls (for the CPU execution); else the shapes of a Llama-3-8B
// layer, weights cycled over >= 1 GiB so that they come from device memory, not L2.
void print_gpu_tables(DeviceKind device, bool small, int reps);

}  // namespace ember::eval
