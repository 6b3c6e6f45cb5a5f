// The memory and kernels behind a DeviceKind (the CUDA backend, benchmarks):
// Cuda is device 0 (gpu_runtime, gpu_kernels: Unsupported without nvcc or a device),
// CudaOnCpu the CPU execution of the same kernels (host_runtime, cpu_exec_kernels).
// Plain C++, compiled in every build.
#pragma once
#include "backend/backend.h"
#include "cuda/device_runtime.h"
#include "cuda/kernel_api.h"

namespace ember::cuda {

DeviceRuntime& device_runtime(DeviceKind kind);  // InvalidArgument for DeviceKind::Cpu
const Kernels& device_kernels(DeviceKind kind);

}  // namespace ember::cuda
