// Device memory as the CUDA backend's host code uses it: allocate, copy, free, wait. Two
// implementations: the GPU (cuda/device_runtime_gpu.cu, CUDA runtime calls checked with file
// and line) and the host (cuda/device_runtime_host.cpp: "device" memory is host memory, for
// the kernels run by cuda/cpu_exec). Plain C++, no CUDA header.
#pragma once
#include <cstddef>
#include <string>

namespace ember::cuda {

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  virtual std::string describe() const = 0;        // "cuda:0 NVIDIA H200 (139.7 GiB, sm_90)"
  virtual size_t free_memory() const = 0;          // bytes free on the device now
  virtual void* allocate(size_t bytes) = 0;        // zero-filled; throws OutOfMemory naming the size
  virtual void release(void* p) noexcept = 0;
  virtual void upload(void* dst, const void* host, size_t bytes) = 0;
  virtual void download(void* host, const void* src, size_t bytes) = 0;  // waits for the work before it
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;      // device to device, in order
};

DeviceRuntime& host_runtime();
DeviceRuntime& gpu_runtime();  // device 0; throws Unsupported without CUDA or a device

}  // namespace ember::cuda
