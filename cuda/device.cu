// Device discovery for `ember --version` and the GPU tests.
#include <cuda_runtime.h>

#include <string>

#include <fmt/format.h>

#include "backend/cuda_api.h"

namespace ember::cuda {

bool built() { return true; }

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return {};
  return prop.name;
}

std::string device_description(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) return {};
  return fmt::format("{}, {:.1f} GiB, compute capability {}.{}", prop.name, prop.totalGlobalMem / 1073741824.0,
                     prop.major, prop.minor);
}

}  // namespace ember::cuda
