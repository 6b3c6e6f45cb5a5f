#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cuda/cpu_exec/capture.h"
#include "cuda/device_runtime.h"
#include "util/error.h"
#include "util/memory.h"

namespace ember::cuda {
namespace {

class HostGraph final : public DeviceGraph {
 public:
  explicit HostGraph(cpu_exec::Graph g) : g_(std::move(g)) {}
  void launch(Stream) override { g_.replay(); }

 private:
  cpu_exec::Graph g_;
};

// The CPU execution's "device": work runs when enqueued (or is recorded while its stream
// captures), so a copy is a memcpy now or at replay.
class HostRuntime final : public DeviceRuntime {
 public:
  std::string describe() const override { return "cuda kernels on the CPU (cpu_exec)"; }
  DeviceInfo info() const override { return {}; }
  size_t free_memory() const override { return system_memory().available; }
  void* allocate(size_t bytes) override {
    if (bytes == 0) return nullptr;
    void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);  // cudaMalloc's alignment
    if (!p) fail(ErrorKind::OutOfMemory, "cpu_exec device memory: cannot allocate {} bytes", bytes);
    std::memset(p, 0, bytes);
    return p;
  }
  void release(void* p) noexcept override { std::free(p); }

  // A stream is a distinct token; nullptr (the default stream) is one too.
  Stream create_stream() override { return reinterpret_cast<Stream>(next_stream_.fetch_add(1)); }
  void destroy_stream(Stream) noexcept override {}

  void upload(void* dst, const void* host, size_t bytes, Stream s) override {
    // A capture would keep the host pointer, not the bytes: the backend uploads before it.
    if (cpu_exec::capturing(s)) fail(ErrorKind::Internal, "cpu_exec: upload of {} bytes on a capturing stream", bytes);
    std::memcpy(dst, host, bytes);
  }
  void download(void* host, const void* src, size_t bytes, Stream s) override {
    if (cpu_exec::capturing(s)) fail(ErrorKind::Internal, "cpu_exec: download of {} bytes on a capturing stream", bytes);
    std::memcpy(host, src, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes, Stream s) override {
    if (cpu_exec::Graph* g = cpu_exec::capturing(s))
      g->add([dst, src, bytes] { std::memmove(dst, src, bytes); });
    else
      std::memmove(dst, src, bytes);
  }

  void synchronize(Stream s) override {
    if (cpu_exec::capturing(s)) fail(ErrorKind::Internal, "cpu_exec: synchronize on a capturing stream");
  }  // work ran when it was enqueued

  void begin_capture(Stream s) override { cpu_exec::begin_capture(s); }
  std::unique_ptr<DeviceGraph> end_capture(Stream s) override {
    return std::make_unique<HostGraph>(cpu_exec::end_capture(s));
  }

 private:
  std::atomic<uintptr_t> next_stream_{0x1000};
};

}  // namespace

DeviceRuntime& host_runtime() {
  static HostRuntime rt;
  return rt;
}

}  // namespace ember::cuda
