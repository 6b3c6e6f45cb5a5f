// The CUDA backend (backend/backend.h) over the Kernels of cuda/kernel_api.h and the memory
// of cuda/device_runtime.h: on the GPU (DeviceKind::Cuda), or with the kernels' own source
// run on the CPU (DeviceKind::CudaOnCpu), which is how every build tests it without a GPU.
#pragma once
#include <memory>

#include "backend/backend.h"

namespace ember::cuda {

std::unique_ptr<WeightStore> make_weight_store(DeviceKind kind);
std::unique_ptr<Backend> make_backend(DeviceKind kind);

}  // namespace ember::cuda
