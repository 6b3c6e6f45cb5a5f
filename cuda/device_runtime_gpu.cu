// The CUDA runtime behind DeviceRuntime: device 0, the default stream, every call checked.
#include <cuda_runtime.h>

#include <fmt/format.h>

#include "cuda/check.h"
#include "cuda/device_runtime.h"
#include "util/error.h"

namespace ember::cuda {
namespace {

class GpuRuntime final : public DeviceRuntime {
 public:
  GpuRuntime() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
      cudaGetLastError();
      fail(ErrorKind::Unsupported, "no CUDA device found (driver missing or no GPU visible)");
    }
    EMBER_CUDA_CHECK(cudaSetDevice(0));
    EMBER_CUDA_CHECK(cudaGetDeviceProperties(&prop_, 0));
  }
  std::string describe() const override {
    return fmt::format("cuda:0 {} ({:.1f} GiB, sm_{}{})", prop_.name, prop_.totalGlobalMem / 1073741824.0, prop_.major,
                       prop_.minor);
  }
  size_t free_memory() const override {
    size_t free = 0, total = 0;
    EMBER_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return free;
  }
  void* allocate(size_t bytes) override {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    EMBER_CUDA_CHECK(cudaMalloc(&p, bytes));
    EMBER_CUDA_CHECK(cudaMemset(p, 0, bytes));
    return p;
  }
  void release(void* p) noexcept override {
    if (p) cudaFree(p);
  }
  void upload(void* dst, const void* host, size_t bytes) override {
    if (bytes) EMBER_CUDA_CHECK(cudaMemcpy(dst, host, bytes, cudaMemcpyHostToDevice));
  }
  void download(void* host, const void* src, size_t bytes) override {
    if (bytes) EMBER_CUDA_CHECK(cudaMemcpy(host, src, bytes, cudaMemcpyDeviceToHost));
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes) EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, nullptr));
  }

 private:
  cudaDeviceProp prop_{};
};

}  // namespace

DeviceRuntime& gpu_runtime() {
  static GpuRuntime rt;
  return rt;
}

}  // namespace ember::cuda
