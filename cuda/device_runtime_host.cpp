#include <cstdlib>
#include <cstring>

#include "cuda/device_runtime.h"
#include "util/error.h"
#include "util/memory.h"

namespace ember::cuda {
namespace {

// The CPU execution's "device": launches are synchronous, so every copy is a memcpy.
class HostRuntime final : public DeviceRuntime {
 public:
  std::string describe() const override { return "cuda kernels on the CPU (cpu_exec)"; }
  size_t free_memory() const override { return system_memory().available; }
  void* allocate(size_t bytes) override {
    if (bytes == 0) return nullptr;
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);  // cudaMalloc's alignment
    if (!p) fail(ErrorKind::OutOfMemory, "cpu_exec device memory: cannot allocate {} bytes", bytes);
    std::memset(p, 0, bytes);
    return p;
  }
  void release(void* p) noexcept override { std::free(p); }
  void upload(void* dst, const void* host, size_t bytes) override { std::memcpy(dst, host, bytes); }
  void download(void* host, const void* src, size_t bytes) override { std::memcpy(host, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override { std::memmove(dst, src, bytes); }
};

}  // namespace

DeviceRuntime& host_runtime() {
  static HostRuntime rt;
  return rt;
}

}  // namespace ember::cuda
