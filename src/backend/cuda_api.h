// What the host code may ask of the CUDA backend. When ember is built without CUDA these
// calls exist too (cuda/no_cuda_stub.cpp): queries report "not built", work throws
// Error(Unsupported), so callers and tests compile and link the same in both builds.
#pragma once
#include <cstdint>
#include <string>

namespace ember::cuda {

bool built();              // compiled with the CUDA backend
int device_count();        // 0 when not built or no device/driver is present
std::string device_name(int device);
// "NVIDIA H200, 139.7 GiB, compute capability 9.0" (empty when the device cannot be queried).
std::string device_description(int device);

}  // namespace ember::cuda
