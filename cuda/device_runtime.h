// Device memory, streams and graphs as the CUDA backend's host code uses them. Two
// implementations: the GPU (cuda/device_runtime_gpu.cu, CUDA runtime calls checked with file
// and line) and the host (cuda/device_runtime_host.cpp: "device" memory is host memory, for
// the kernels run by cuda/cpu_exec). Plain C++, no CUDA header.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "cuda/stream.h"

namespace ember::cuda {

// Work captured from a stream (a CUDA graph), replayed with one launch: every kernel with the
// arguments it had at capture, so what changes between replays must be device data.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
  virtual void launch(Stream s) = 0;
};

// What the device's peak rates are computed from (cuda/tensor_peak.h); zeros where unknown
// (the CPU execution).
struct DeviceInfo {
  int cc_major = 0, cc_minor = 0;  // compute capability
  int sm_count = 0;
  int clock_khz = 0;               // peak SM clock (cudaDevAttrClockRate)
};

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  virtual std::string describe() const = 0;        // "cuda:0 NVIDIA H200 (139.7 GiB, sm_90)"
  virtual DeviceInfo info() const = 0;
  virtual size_t free_memory() const = 0;          // bytes free on the device now
  // Zero-filled and ready when this returns; throws OutOfMemory naming the size. Never
  // while a stream captures.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p) noexcept = 0;

  // Streams of the backend's work. They do not wait for the default stream (so a capture
  // cannot be broken by it): what runs there (allocate, uploads on nullptr) is finished
  // when the call returns.
  virtual Stream create_stream() = 0;
  virtual void destroy_stream(Stream s) noexcept = 0;
  // Enqueued on s: nullptr, the default stream, waits for the copy. `host` may be reused
  // once upload returns.
  virtual void upload(void* dst, const void* host, size_t bytes, Stream s) = 0;
  virtual void download(void* host, const void* src, size_t bytes, Stream s) = 0;  // waits for s
  virtual void copy(void* dst, const void* src, size_t bytes, Stream s) = 0;      // device to device
  // Returns once the work enqueued on s so far has run (benchmarks time work by the wall
  // clock around many launches and one synchronize). Never while s captures.
  virtual void synchronize(Stream s) = 0;

  // Between the two, the work enqueued on s is recorded into the graph, not run.
  virtual void begin_capture(Stream s) = 0;
  virtual std::unique_ptr<DeviceGraph> end_capture(Stream s) = 0;
};

DeviceRuntime& host_runtime();
DeviceRuntime& gpu_runtime();  // device 0; throws Unsupported without CUDA or a device

}  // namespace ember::cuda
