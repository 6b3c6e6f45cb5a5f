// Device memory the CUDA backend owns: a buffer of a DeviceRuntime (BackendBuffer), and a
// workspace that grows to the largest size asked of it.
#pragma once
#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "cuda/device_runtime.h"

namespace ember::cuda {

class DeviceMemory final : public BackendBuffer {
 public:
  DeviceMemory(DeviceRuntime& rt, size_t bytes) : rt_(rt) {
    data_ = rt.allocate(bytes);
    bytes_ = bytes;
  }
  ~DeviceMemory() override { rt_.release(data_); }

 private:
  DeviceRuntime& rt_;
};

// Device memory that grows to the largest size asked of it (workspaces, per-step tables).
// Each growth moves it, so it counts a generation that captured graphs compare against.
class GrowingBuffer {
 public:
  GrowingBuffer(DeviceRuntime& rt, uint64_t& generation) : rt_(rt), generation_(generation) {}
  void* reserve(size_t bytes) {
    if (!mem_ || mem_->bytes() < bytes) {
      mem_.reset();
      mem_ = std::make_unique<DeviceMemory>(rt_, bytes);
      ++generation_;
    }
    return mem_->data();
  }

 private:
  DeviceRuntime& rt_;
  uint64_t& generation_;
  std::unique_ptr<DeviceMemory> mem_;
};

}  // namespace ember::cuda
