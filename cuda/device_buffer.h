// RAII ownership of device memory: a typed, move-only array allocated with cudaMalloc and
// freed in the destructor, with checked, bounds-checked copies to and from the host.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "cuda/check.h"
#include "util/error.h"

namespace ember::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) : count_(count) {
    if (count_ > 0) EMBER_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), count_ * sizeof(T)));
  }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      ptr_ = std::exchange(other.ptr_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() { return ptr_; }
  const T* get() const { return ptr_; }
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

  void upload(const T* host, size_t count, cudaStream_t stream = nullptr) {
    check_count(count, "upload");
    if (count > 0) EMBER_CUDA_CHECK(cudaMemcpyAsync(ptr_, host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  }
  // Synchronous on `stream`: the host data is valid on return.
  void download(T* host, size_t count, cudaStream_t stream = nullptr) const {
    check_count(count, "download");
    if (count == 0) return;
    EMBER_CUDA_CHECK(cudaMemcpyAsync(host, ptr_, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
    EMBER_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

 private:
  void check_count(size_t count, const char* what) const {
    if (count > count_) fail(ErrorKind::Internal, "DeviceBuffer::{}: {} elements into a buffer of {}", what, count, count_);
  }
  void release() noexcept {
    if (ptr_ != nullptr) cudaFree(ptr_);  // never throws from a destructor
    ptr_ = nullptr;
    count_ = 0;
  }

  T* ptr_ = nullptr;
  size_t count_ = 0;
};

}  // namespace ember::cuda
