// The CUDA runtime behind DeviceRuntime: device 0, every call checked.
#include <cuda_runtime.h>

#include <fmt/format.h>

#include "cuda/check.h"
#include "cuda/device_runtime.h"
#include "util/error.h"

namespace ember::cuda {
namespace {

class GpuGraph final : public DeviceGraph {
 public:
  explicit GpuGraph(cudaGraphExec_t exec) : exec_(exec) {}
  ~GpuGraph() override { cudaGraphExecDestroy(exec_); }
  void launch(Stream s) override { EMBER_CUDA_CHECK(cudaGraphLaunch(exec_, static_cast<cudaStream_t>(s))); }

 private:
  cudaGraphExec_t exec_;
};

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
  DeviceInfo info() const override {
    DeviceInfo d;
    d.cc_major = prop_.major;
    d.cc_minor = prop_.minor;
    d.sm_count = prop_.multiProcessorCount;
    // An attribute, not cudaDeviceProp::clockRate: CUDA 13 dropped that field.
    EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&d.clock_khz, cudaDevAttrClockRate, 0));
    return d;
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
    EMBER_CUDA_CHECK(cudaDeviceSynchronize());  // zeroed before any stream uses it
    return p;
  }
  void release(void* p) noexcept override {
    if (p) cudaFree(p);
  }
  Stream create_stream() override {
    cudaStream_t s = nullptr;
    EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }
  void destroy_stream(Stream s) noexcept override {
    if (s) cudaStreamDestroy(static_cast<cudaStream_t>(s));
  }
  // From pageable host memory: the driver stages the bytes before the call returns.
  void upload(void* dst, const void* host, size_t bytes, Stream s) override {
    if (!bytes) return;
    EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(s)));
    if (!s) EMBER_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }
  void download(void* host, const void* src, size_t bytes, Stream s) override {
    if (!bytes) return;
    EMBER_CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(s)));
    EMBER_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
  }
  void copy(void* dst, const void* src, size_t bytes, Stream s) override {
    if (bytes)
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(s)));
  }
  void synchronize(Stream s) override { EMBER_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s))); }
  // Thread-local mode: another thread's CUDA calls neither break nor join the capture.
  void begin_capture(Stream s) override {
    EMBER_CUDA_CHECK(cudaStreamBeginCapture(static_cast<cudaStream_t>(s), cudaStreamCaptureModeThreadLocal));
  }
  std::unique_ptr<DeviceGraph> end_capture(Stream s) override {
    cudaGraph_t graph = nullptr;
    EMBER_CUDA_CHECK(cudaStreamEndCapture(static_cast<cudaStream_t>(s), &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    EMBER_CUDA_CHECK(made);
    return std::make_unique<GpuGraph>(exec);
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
