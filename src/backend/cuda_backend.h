// The CUDA backend's entry points, declared here at the seam and defined in cuda/ (over the
// Kernels of cuda/kernel_api.h and the memory of cuda/device_runtime.h), so that cuda/
// depends on backend/ and never the other way: on the GPU (DeviceKind::Cuda), or with the
// kernels' own source run on the CPU (DeviceKind::CudaOnCpu), which is how every build
// tests it without a GPU.
#pragma once
#include <memory>

#include "backend/backend.h"

namespace ember::cuda {

std::unique_ptr<WeightStore> make_weight_store(DeviceKind kind);
std::unique_ptr<Backend> make_backend(DeviceKind kind);

}  // namespace ember::cuda
