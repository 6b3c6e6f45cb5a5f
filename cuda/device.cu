// Device discovery for `ember --version` and the GPU tests.
#include <cuda_runtime.h>

#include <string>

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

}  // namespace ember::cuda
